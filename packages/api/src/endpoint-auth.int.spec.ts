/**
 * Endpoint authentication over HTTP, delivered by the real dispatcher and transport: mTLS to a
 * real https receiver demanding a certificate of a CA made in the test, and OAuth2 client
 * credentials against a real local token server. Nothing secret (the private key, the client
 * secret, a token) in an answer, a table, the ledger, an export or a log line at any level; every
 * test ends with `ledger replay --verify`'s check: no differences.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import { sql } from 'kysely'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { Logger } from '@hookledger/core'
import {
  MtlsReceiver,
  createTestCa,
  dbFingerprint,
  engineHarness,
  type EngineHarness,
  type TestApi,
  type TestCa,
  testApi,
} from '@hookledger/testkit'

const logLines: string[] = []
const capture = (level: string) => (obj: object, msg?: string) => void logLines.push(JSON.stringify({ level, msg, ...obj }))
const capturingLogger: Logger = { debug: capture('debug'), info: capture('info'), warn: capture('warn'), error: capture('error') }

let ca: TestCa
beforeAll(() => {
  ca = createTestCa()
})
afterAll(() => ca.dispose())

let h: EngineHarness
let api: TestApi
let admin: string
let operator: string
const closing: Array<{ close(): Promise<void> }> = []
beforeEach(async () => {
  logLines.length = 0
  h = await engineHarness({ start: new Date().toISOString(), logger: capturingLogger })
  api = testApi(h.db, { clock: h.clock, secretBox: h.secretBox, logger: capturingLogger })
  admin = await api.token(h.owner, ['admin', 'publish'])
  operator = await api.token('', ['operator'])
})
afterEach(async () => {
  await Promise.all(closing.splice(0).map((c) => c.close()))
  await h.close()
})

let seq = 0
const create = (body: Record<string, unknown>) =>
  api.call('POST', '/api/admin/webhooks', { token: admin, body: { url: h.receiver.url(), event_types: ['booking.*'], ...body } })
const patch = (id: string, body: Record<string, unknown>) => api.call('PATCH', `/api/admin/webhooks/${id}`, { token: admin, body })
async function publish(): Promise<string> {
  const id = `evt_auth_${++seq}`
  const published = await api.call('POST', '/api/events', { token: admin, body: { id, type: 'booking.created', subject: `booking://${seq}` } })
  expect(published.status).toBe(202)
  await h.step()
  return id
}
const expectReplayClean = async () => expect((await h.replay()).differences).toEqual([])

/** Every answer an owner or the operator can read about `id`, the tables, and the log: none holds `secrets`. */
async function expectNowhere(id: string, secrets: readonly string[]) {
  const delivery = (await api.call('GET', `/api/admin/webhooks/${id}/deliveries`, { token: admin })).body.data[0]
  const answers = [
    await api.call('GET', `/api/admin/webhooks/${id}`, { token: admin }),
    await api.call('GET', '/api/admin/webhooks', { token: admin }),
    ...(delivery ? [await api.call('GET', `/api/admin/deliveries/${delivery.id}/attempts`, { token: admin })] : []),
    await api.call('GET', '/api/operator/ledger?limit=200', { token: operator }),
    await api.call('GET', `/api/operator/ledger/audit?endpoint_id=${id}`, { token: operator }),
    await api.call('GET', '/api/operator/ledger/export', { token: operator }),
    await api.call('POST', '/api/operator/ledger/replay', { token: operator }),
  ]
  const tables = (
    await sql<{ name: string }>`
      select table_name as name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'
    `.execute(h.db)
  ).rows.map((r) => r.name)
  const tableText = new Map<string, string>()
  for (const table of tables) {
    tableText.set(table, (await sql<{ row: string }>`select x::text as row from ${sql.table(table)} x`.execute(h.db)).rows.map((r) => r.row).join('\n'))
  }
  for (const secret of secrets) {
    for (const answer of answers) {
      expect(answer.status, answer.text).toBeLessThan(300)
      expect(answer.text).not.toContain(secret)
    }
    for (const [table, text] of tableText) expect(text, `${table} holds a secret`).not.toContain(secret)
    for (const line of logLines) expect(line).not.toContain(secret)
  }
}

/** A line of the PEM body: any leak of the key would carry it. */
const keyLine = (pem: string) => pem.split('\n')[1]!

describe('mTLS', () => {
  it('presents the client certificate on connect; a read shows fingerprint, subject and expiry, never the key', async () => {
    const receiver = await new MtlsReceiver(ca).start()
    closing.push(receiver)
    const created = await create({ url: receiver.url(), mtls: { ...ca.client, ca: ca.ca } })
    expect(created.status, created.text).toBe(201)
    const id = created.body.endpoint.id as string
    expect(created.body.endpoint.mtls).toEqual({
      certificate: ca.client.certificate,
      fingerprint: expect.stringMatching(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/),
      subject: 'CN=hookledger-client',
      not_after: expect.any(String),
      ca: ca.ca,
    })
    expect(created.text).not.toContain(keyLine(ca.client.private_key))

    const eventId = await publish()
    expect((await h.deliveryOf(eventId)).state).toBe('completed')
    expect(receiver.requests.map((r) => r.clientCommonName)).toEqual(['hookledger-client'])
    expect(receiver.requests[0]!.headers['webhook-signature']).toMatch(/^v1,/)

    // On update, a new certificate without a key keeps the key held; one it does not match is refused.
    const unchanged = await patch(id, { mtls: { certificate: ca.client.certificate, ca: ca.ca } })
    expect(unchanged.status, unchanged.text).toBe(200)
    // The same key given again keeps its seal: no entry either.
    expect((await patch(id, { mtls: { ...ca.client, ca: ca.ca } })).status).toBe(200)
    expect((await h.ledgerOf('endpoint_id', id)).filter((e) => e.kind === 'endpoint.updated')).toEqual([])
    const other = ca.issue('other-client', 'client')
    const mismatch = await patch(id, { mtls: { certificate: other.certificate } })
    expect(mismatch.status, mismatch.text).toBe(422)
    expect(mismatch.body).toMatchObject({ code: 'invalid_mtls', field: 'mtls.private_key' })

    const audit = await api.call('GET', `/api/operator/ledger/audit?endpoint_id=${id}`, { token: operator })
    const payload = (audit.body.data as { kind: string; payload: { mtls: Record<string, unknown> } }[]).find((e) => e.kind === 'endpoint.created')!.payload
    expect(payload.mtls['private_key_sealed']).toBe('[sealed]')
    await expectNowhere(id, [keyLine(ca.client.private_key), keyLine(other.private_key)])
    // The API logs each input at debug: the key there is `[redacted]`.
    expect(logLines.some((l) => l.includes('api:input') && l.includes('"private_key":"[redacted]"'))).toBe(true)

    // An http URL while the certificate is held: refused (it would not be presented).
    const plain = await patch(id, { url: h.receiver.url() })
    expect(plain.status, plain.text).toBe(422)
    expect(plain.body).toMatchObject({ code: 'invalid_mtls', field: 'mtls' })

    // Removed: the receiver refuses the handshake, the attempt is a retryable connection error.
    const removed = await patch(id, { mtls: null })
    expect(removed.body.mtls).toBeNull()
    const refused = await publish()
    expect(await h.deliveryOf(refused)).toMatchObject({ state: 'retryable', last_error: expect.stringMatching(/^connection_error: /) })
    expect(receiver.requests).toHaveLength(1)
    await expectReplayClean()
  })

  it('refuses, with 422 problem+json naming the field, what would not work; nothing changes', async () => {
    const other = ca.issue('other-client', 'client')
    const endpoint = await create({})
    const id = endpoint.body.endpoint.id as string
    const before = await dbFingerprint(h.db)
    const cases: [Record<string, unknown>, string][] = [
      [{ certificate: 'not a pem', private_key: ca.client.private_key }, 'mtls.certificate'],
      [{ certificate: ca.client.certificate, private_key: 'not a key' }, 'mtls.private_key'],
      [{ certificate: ca.client.certificate, private_key: other.private_key }, 'mtls.private_key'],
      [{ certificate: ca.client.certificate, private_key: ca.client.private_key, ca: 'not a pem' }, 'mtls.ca'],
      [{ certificate: ca.client.certificate + '\n'.repeat(17 * 1024), private_key: ca.client.private_key }, 'mtls.certificate'],
      [{ certificate: ca.client.certificate }, 'mtls.private_key'],
      // A good pair on an http URL: never presented, so refused.
      [{ ...ca.client }, 'mtls'],
    ]
    for (const [mtls, field] of cases) {
      for (const answer of [await create({ mtls }), await patch(id, { mtls })]) {
        expect(answer.status, answer.text).toBe(422)
        expect(answer.contentType).toContain('application/problem+json')
        expect(answer.body).toMatchObject({ field })
        expect(answer.text).not.toContain(keyLine(ca.client.private_key))
        expect(answer.text).not.toContain(keyLine(other.private_key))
      }
    }
    // Expired on the injected clock (the test CA's certificates live one day).
    h.clock.advance(2 * 24 * 3_600_000)
    const expired = await create({ mtls: ca.client })
    expect(expired.status, expired.text).toBe(422)
    expect(expired.body).toMatchObject({ code: 'invalid_mtls', field: 'mtls.certificate', detail: expect.stringContaining('expired') })
    expect(await dbFingerprint(h.db)).toEqual(before)
  })
})

/** A real OAuth2 token server on loopback: records each token request, answers from `reply`. */
class TokenServer {
  readonly requests: { headers: IncomingHttpHeaders; form: URLSearchParams }[] = []
  issued = 0
  reply: (n: number) => { status: number; body: unknown } = (n) => ({ status: 200, body: { access_token: `tok-${n}-a8f3e1c9`, token_type: 'Bearer', expires_in: 3600 } })
  readonly #server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      this.requests.push({ headers: req.headers, form: new URLSearchParams(Buffer.concat(chunks).toString('utf8')) })
      const { status, body } = this.reply(++this.issued)
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))
    })
  })
  port = 0
  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve))
    this.port = (this.#server.address() as { port: number }).port
    return this
  }
  url = () => `http://127.0.0.1:${this.port}/oauth/token`
  close = () => new Promise<void>((resolve) => (this.#server.closeAllConnections(), this.#server.close(() => resolve())))
}

const CLIENT_SECRET = 'cs_live_91b7d2f04e6a3c58'

describe('OAuth2 client credentials', () => {
  let tokens: TokenServer
  beforeEach(async () => {
    tokens = await new TokenServer().start()
    closing.push(tokens)
  })
  const oauth2 = () => ({ token_url: tokens.url(), client_id: 'hookledger', client_secret: CLIENT_SECRET, scope: 'webhooks:write', audience: 'https://api.example' })

  it('fetches a token (client_secret_basic), caches it until expiry less the margin, sends it as a bearer; never shown', async () => {
    const created = await create({ oauth2: oauth2() })
    expect(created.status, created.text).toBe(201)
    const id = created.body.endpoint.id as string
    expect(created.body.endpoint.oauth2).toEqual({ token_url: tokens.url(), client_id: 'hookledger', scope: 'webhooks:write', audience: 'https://api.example' })

    await publish()
    await publish()
    expect(tokens.requests).toHaveLength(1)
    const [asked] = tokens.requests
    expect(asked!.headers.authorization).toBe(`Basic ${Buffer.from(`hookledger:${CLIENT_SECRET}`).toString('base64')}`)
    expect(asked!.headers['content-type']).toBe('application/x-www-form-urlencoded')
    expect(Object.fromEntries(asked!.form)).toEqual({ grant_type: 'client_credentials', scope: 'webhooks:write', audience: 'https://api.example' })
    expect(h.receiver.requests.map((r) => r.headers.authorization)).toEqual(['Bearer tok-1-a8f3e1c9', 'Bearer tok-1-a8f3e1c9'])

    // 3600 s less the 30 s margin: still the same token at 3569 s, a new one at 3571 s.
    h.clock.advance(3_569_000)
    await publish()
    expect(tokens.requests).toHaveLength(1)
    h.clock.advance(2_000)
    // The receiver echoes the token back: the ledger keeps the answer with the token masked.
    h.receiver.answer((req) => ({ status: 200, body: JSON.stringify({ got: req.headers.authorization }) }))
    await publish()
    expect(tokens.requests).toHaveLength(2)
    expect(h.receiver.requests.at(-1)!.headers.authorization).toBe('Bearer tok-2-a8f3e1c9')

    await expectNowhere(id, [CLIENT_SECRET, 'tok-1-a8f3e1c9', 'tok-2-a8f3e1c9'])
    const audit = await api.call('GET', `/api/operator/ledger/audit?endpoint_id=${id}`, { token: operator })
    const created2 = (audit.body.data as { kind: string; payload: { oauth2: Record<string, unknown> } }[]).find((e) => e.kind === 'endpoint.created')!
    expect(created2.payload.oauth2).toMatchObject({ client_id: 'hookledger', client_secret_sealed: '[sealed]' })
    expect(logLines.some((l) => l.includes('api:input') && l.includes('"client_secret":"[redacted]"'))).toBe(true)
    // The same configuration again (secret included) writes nothing.
    expect((await patch(id, { oauth2: oauth2() })).status).toBe(200)
    expect((await h.ledgerOf('endpoint_id', id)).filter((e) => e.kind === 'endpoint.updated')).toEqual([])
    await expectReplayClean()
  })

  it('a 401 from the receiver fetches a new token once and sends again; a second 401 is the answer (a 4xx: discarded)', async () => {
    const created = await create({ oauth2: oauth2() })
    const id = created.body.endpoint.id as string
    h.receiver.enqueue({ status: 401 })
    const refreshed = await publish()
    expect(await h.deliveryOf(refreshed)).toMatchObject({ state: 'completed', attempts: 1 })
    expect(h.receiver.requests.map((r) => r.headers.authorization)).toEqual(['Bearer tok-1-a8f3e1c9', 'Bearer tok-2-a8f3e1c9'])

    h.receiver.answer({ status: 401 })
    const refused = await publish()
    expect(await h.deliveryOf(refused)).toMatchObject({ state: 'discarded', last_status: 401, attempts: 1 })
    expect(tokens.requests).toHaveLength(3)
    expect(h.receiver.requests).toHaveLength(4)
    await expectNowhere(id, [CLIENT_SECRET, 'tok-1-a8f3e1c9', 'tok-2-a8f3e1c9', 'tok-3-a8f3e1c9'])
    await expectReplayClean()
  })

  it('a token failure is a retryable attempt naming the token URL and its answer; the receiver is not called', async () => {
    tokens.reply = () => ({ status: 400, body: { error: 'invalid_client', error_description: `bad secret ${CLIENT_SECRET}` } })
    const created = await create({ oauth2: oauth2() })
    const id = created.body.endpoint.id as string
    const failed = await publish()
    expect(await h.deliveryOf(failed)).toMatchObject({
      state: 'retryable',
      attempts: 1,
      last_error: `oauth2_token_failed: HTTP 400 (invalid_client) from ${tokens.url()}`,
    })
    expect(h.receiver.requests).toEqual([])

    // The token server recovers: the retry fetches a token and delivers.
    tokens.reply = (n) => ({ status: 200, body: { access_token: `tok-${n}-a8f3e1c9`, expires_in: 60 } })
    h.clock.advance(60_000)
    await h.step()
    expect((await h.deliveryOf(failed)).state).toBe('completed')
    expect(h.receiver.requests.map((r) => r.headers.authorization)).toEqual(['Bearer tok-2-a8f3e1c9'])
    await expectNowhere(id, [CLIENT_SECRET, 'tok-2-a8f3e1c9'])
    await expectReplayClean()
  })

  it('refuses a blocked token URL, a missing secret, and a custom authorization header (422 naming the field)', async () => {
    const endpoint = await create({})
    const id = endpoint.body.endpoint.id as string
    const before = await dbFingerprint(h.db)
    const cases: [Record<string, unknown>, string][] = [
      [{ oauth2: { ...oauth2(), token_url: 'http://10.0.0.7/token' } }, 'oauth2.token_url'],
      [{ oauth2: { ...oauth2(), token_url: 'not a url' } }, 'oauth2.token_url'],
      [{ oauth2: { ...oauth2(), headers: undefined, client_secret: undefined } }, 'oauth2.client_secret'],
      [{ oauth2: oauth2(), headers: { authorization: 'Bearer x' } }, 'headers.authorization'],
    ]
    for (const [body, field] of cases) {
      for (const answer of [await create(body), await patch(id, body)]) {
        expect(answer.status, answer.text).toBeGreaterThanOrEqual(400)
        expect(answer.status, answer.text).toBeLessThan(500)
        expect(answer.contentType).toContain('application/problem+json')
        expect(answer.body).toMatchObject({ field })
        expect(answer.text).not.toContain(CLIENT_SECRET)
      }
    }
    expect(await dbFingerprint(h.db)).toEqual(before)
    // On update, leaving the secret out keeps the one held.
    const withAuth = await create({ oauth2: oauth2() })
    const kept = await patch(withAuth.body.endpoint.id as string, { oauth2: { ...oauth2(), client_secret: undefined, scope: null } })
    expect(kept.status, kept.text).toBe(200)
    expect(kept.body.oauth2).toMatchObject({ scope: null })
    await publish()
    expect(tokens.requests[0]!.headers.authorization).toBe(`Basic ${Buffer.from(`hookledger:${CLIENT_SECRET}`).toString('base64')}`)

    // But not to another token URL: a held secret is never sent where it was not given for.
    const elsewhere = await new TokenServer().start()
    closing.push(elsewhere)
    const beforeMove = await dbFingerprint(h.db)
    const moved = await patch(withAuth.body.endpoint.id as string, { oauth2: { ...oauth2(), token_url: elsewhere.url(), client_secret: undefined } })
    expect(moved.status, moved.text).toBe(400)
    expect(moved.contentType).toContain('application/problem+json')
    expect(moved.body).toMatchObject({ field: 'oauth2.client_secret' })
    expect(await dbFingerprint(h.db)).toEqual(beforeMove)
    await publish()
    expect(elsewhere.requests).toEqual([])
    await expectReplayClean()
  })
})
