/**
 * Endpoint options over HTTP, delivered by the real dispatcher and transport to a real receiver:
 * custom headers (plain and secret), `follow_redirects`, and the published v1a keys. Every test
 * ends with `ledger replay --verify`'s check: no differences.
 */
import { sql } from 'kysely'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { SECRET_HEADER_MASK, type Logger } from '@hookledger/core'
import { dbFingerprint, engineHarness, type EngineHarness, type ReceivedRequest, testApi, type TestApi } from '@hookledger/testkit'

/** Every line the API and the dispatcher log, at every level (debug included), as JSON. */
const logLines: string[] = []
const capture = (level: string) => (obj: object, msg?: string) => void logLines.push(JSON.stringify({ level, msg, ...obj }))
const capturingLogger: Logger = { debug: capture('debug'), info: capture('info'), warn: capture('warn'), error: capture('error') }

let h: EngineHarness
let api: TestApi
let admin: string
let operator: string
beforeEach(async () => {
  logLines.length = 0
  h = await engineHarness({ start: new Date().toISOString(), logger: capturingLogger })
  api = testApi(h.db, { clock: h.clock, secretBox: h.secretBox, logger: capturingLogger })
  admin = await api.token(h.owner, ['admin', 'publish'])
  operator = await api.token('', ['operator'])
})
afterEach(() => h.close())

const SECRET = 'sk_live_7f3a9c2e41d84b0c'
let seq = 0

async function create(body: Record<string, unknown>) {
  const answer = await api.call('POST', '/api/admin/webhooks', {
    token: admin,
    body: { url: h.receiver.url(), event_types: ['booking.*'], ...body },
  })
  expect(answer.status, answer.text).toBe(201)
  return { id: answer.body.endpoint.id as string, answer }
}

/** Publishes one event and runs the dispatcher once; returns the event id. */
async function publish(): Promise<string> {
  const id = `evt_opt_${++seq}`
  const published = await api.call('POST', '/api/events', {
    token: admin,
    body: { id, type: 'booking.created', subject: `booking://${seq}` },
  })
  expect(published.status).toBe(202)
  await h.step()
  return id
}

const patch = (id: string, body: Record<string, unknown>) => api.call('PATCH', `/api/admin/webhooks/${id}`, { token: admin, body })
const expectReplayClean = async () => expect((await h.replay()).differences).toEqual([])

describe('custom headers', () => {
  it('are sent on every attempt as set; a secret one never appears in an answer, the ledger, a table or a log line', async () => {
    const { id, answer: created } = await create({
      headers: { 'X-Tenant': 'acme', 'x-api-key': { value: SECRET, secret: true } },
    })
    expect(created.body.endpoint).toMatchObject({
      headers: { 'x-tenant': 'acme', 'x-api-key': SECRET_HEADER_MASK },
      secret_headers: ['x-api-key'],
      follow_redirects: 'same_origin',
    })
    await publish()
    // A retry sends them again.
    h.receiver.answer({ status: 500 })
    await publish()
    h.clock.advance(6_000)
    // A receiver that echoes its request back (body and a header): the ledger keeps neither value.
    h.receiver.answer((req) => ({ status: 200, headers: { 'x-echo': String(req.headers['x-api-key']) }, body: JSON.stringify({ got: req.headers['x-api-key'] }) }))
    await h.step()
    expect(h.receiver.requests.length).toBeGreaterThanOrEqual(3)
    for (const req of h.receiver.requests) {
      expect(req.headers['x-tenant']).toBe('acme')
      expect(req.headers['x-api-key']).toBe(SECRET)
      // The signature and the framing are the transport's, untouched.
      expect(req.headers['webhook-signature']).toMatch(/^v1,/)
      expect(req.headers['content-type']).toBe('application/json')
    }

    // A secret header kept by `{ secret: true }`, a plain one changed, one added.
    const updated = await patch(id, { headers: { 'x-tenant': 'acme-2', 'x-api-key': { secret: true }, 'x-extra': '1' } })
    expect(updated.status, updated.text).toBe(200)
    expect(updated.body.headers).toEqual({ 'x-tenant': 'acme-2', 'x-extra': '1', 'x-api-key': SECRET_HEADER_MASK })
    await publish()
    const last = h.receiver.requests.at(-1)!
    expect([last.headers['x-tenant'], last.headers['x-api-key'], last.headers['x-extra']]).toEqual(['acme-2', SECRET, '1'])

    const delivery = (await api.call('GET', `/api/admin/webhooks/${id}/deliveries`, { token: admin })).body.data[0]
    const answers = [
      created,
      updated,
      await api.call('GET', `/api/admin/webhooks/${id}`, { token: admin }),
      await api.call('GET', '/api/admin/webhooks', { token: admin }),
      await api.call('GET', `/api/admin/deliveries/${delivery.id}/attempts`, { token: admin }),
      await api.call('GET', '/api/operator/ledger?limit=200', { token: operator }),
      await api.call('GET', `/api/operator/ledger/audit?endpoint_id=${id}`, { token: operator }),
      await api.call('GET', '/api/operator/ledger/export', { token: operator }),
      await api.call('POST', '/api/operator/ledger/replay', { token: operator }),
    ]
    for (const answer of answers) {
      expect(answer.status, answer.text).toBeLessThan(300)
      expect(answer.text).not.toContain(SECRET)
    }
    // The operator's ledger shows which headers are secret, never their sealed values.
    const audit = answers[6]!.body.data as { kind: string; payload: Record<string, unknown> }[]
    expect(audit.find((e) => e.kind === 'endpoint.created')!.payload['secret_headers_sealed']).toEqual({ 'x-api-key': '[sealed]' })

    // Sealed in the ledger and the row (and opened by the worker with the master key), clear nowhere.
    const tables = (
      await sql<{ name: string }>`
        select table_name as name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'
      `.execute(h.db)
    ).rows.map((r) => r.name)
    for (const table of tables) {
      const text = (await sql<{ row: string }>`select x::text as row from ${sql.table(table)} x`.execute(h.db)).rows.map((r) => r.row).join('\n')
      expect(text, `${table} holds the secret header`).not.toContain(SECRET)
    }
    const row = await h.endpointOf(id)
    expect(h.secretBox.open(new Uint8Array(Buffer.from(row.secret_headers_sealed['x-api-key']!, 'base64')))).toBe(SECRET)

    // The request's input is logged at debug, with the secret value redacted.
    expect(logLines.some((l) => l.includes('"level":"debug"') && l.includes('api:input') && l.includes('x-api-key'))).toBe(true)
    for (const line of logLines) expect(line).not.toContain(SECRET)
    await expectReplayClean()
  })

  it('are removed by an empty set, and an endpoint created without them sends none', async () => {
    const { id } = await create({ headers: { 'x-tenant': 'acme', 'x-api-key': { value: SECRET, secret: true } } })
    const cleared = await patch(id, { headers: {} })
    expect(cleared.body).toMatchObject({ headers: {}, secret_headers: [] })
    const plain = await create({})
    expect(plain.answer.body.endpoint).toMatchObject({ headers: {}, secret_headers: [], follow_redirects: 'same_origin' })
    await publish()
    expect(h.receiver.requests).toHaveLength(2)
    for (const req of h.receiver.requests) expect(req.headers['x-tenant'] ?? req.headers['x-api-key']).toBeUndefined()
    await expectReplayClean()
  })

  it.each([
    ['Webhook-Id', 'x', 'header_reserved', 'headers.Webhook-Id'],
    ['webhook-signature', 'x', 'header_reserved', 'headers.webhook-signature'],
    ['authorization', 'Bearer x', 'header_reserved', 'headers.authorization'],
    ['Content-Type', 'text/plain', 'header_reserved', 'headers.Content-Type'],
    ['content-length', '1', 'header_reserved', 'headers.content-length'],
    ['host', 'evil.example', 'header_reserved', 'headers.host'],
    ['user-agent', 'x', 'header_reserved', 'headers.user-agent'],
    ['transfer-encoding', 'chunked', 'header_reserved', 'headers.transfer-encoding'],
    ['proxy-authorization', 'x', 'header_reserved', 'headers.proxy-authorization'],
    ['x bad', 'v', 'invalid_header', 'headers.x bad'],
    ['x-smuggle', 'v\r\nx-evil: 1', 'invalid_header', 'headers.x-smuggle'],
  ])('%s → 422 %s naming %s, on create and on update, and nothing changes', async (name, value, code, field) => {
    const { id } = await create({})
    const before = await dbFingerprint(h.db)
    for (const answer of [
      await api.call('POST', '/api/admin/webhooks', { token: admin, body: { url: h.receiver.url(), event_types: ['booking.*'], headers: { [name]: value } } }),
      await patch(id, { headers: { [name]: { value, secret: true } } }),
    ]) {
      expect(answer.status, answer.text).toBe(422)
      expect(answer.contentType).toContain('application/problem+json')
      expect(answer.body).toMatchObject({ code, field })
      expect(answer.text).not.toContain('x-evil')
    }
    expect(await dbFingerprint(h.db)).toEqual(before)
  })

  it('limits: 21 headers, or more than 4 KiB in all, → 422 naming headers; a bad shape → 400', async () => {
    const many = Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`x-h${i}`, 'v']))
    const big = { 'x-a': 'v'.repeat(2048), 'x-b': 'v'.repeat(2048) }
    for (const headers of [many, big]) {
      const answer = await api.call('POST', '/api/admin/webhooks', { token: admin, body: { url: h.receiver.url(), event_types: ['booking.*'], headers } })
      expect(answer.status, answer.text).toBe(422)
      expect(answer.body).toMatchObject({ code: 'invalid_header', field: 'headers' })
    }
    const shape = await api.call('POST', '/api/admin/webhooks', { token: admin, body: { url: h.receiver.url(), event_types: ['booking.*'], headers: { 'x-a': 1 } } })
    expect(shape.status).toBe(400)
    expect(shape.body.field).toMatch(/^headers/)
  })
})

describe('follow_redirects', () => {
  /** The receiver redirects /hook to /next on its own origin and accepts /next. */
  const redirecting = (req: ReceivedRequest) => (req.path === '/hook' ? { status: 302, headers: { location: '/next' } } : { status: 204 })

  it('same_origin (the default) follows the same-origin hop; none records the 3xx and discards redirect_not_followed', async () => {
    h.receiver.answer(redirecting)
    const { id } = await create({})
    const followed = await publish()
    expect(h.receiver.requests.map((r) => r.path)).toEqual(['/hook', '/next'])
    expect((await h.deliveryOf(followed)).state).toBe('completed')

    const switched = await patch(id, { follow_redirects: 'none' })
    expect(switched.body.follow_redirects).toBe('none')
    const refused = await publish()
    expect(h.receiver.requests.map((r) => r.path)).toEqual(['/hook', '/next', '/hook'])
    const delivery = await h.deliveryOf(refused)
    expect(delivery).toMatchObject({ state: 'discarded', last_status: 302 })
    const attempts = await api.call('GET', `/api/admin/deliveries/${delivery.id}/attempts`, { token: admin })
    expect(attempts.body.data[0]).toMatchObject({
      status_code: 302,
      outcome: 'discarded',
      error: `redirect_not_followed: HTTP 302 to ${h.receiver.url('/next')} (the endpoint's follow_redirects is "none")`,
    })
    const discarded = (await h.ledgerOf('delivery_id', delivery.id)).find((e) => e.kind === 'delivery.discarded')
    expect(discarded?.payload).toMatchObject({ reason: 'redirect_not_followed', detail: `302 → ${h.receiver.url('/next')}` })

    // Back to same_origin: followed again (after the cool-down the refused one started).
    await patch(id, { follow_redirects: 'same_origin' })
    const again = await publish()
    h.clock.advance(5 * 60_000 + 1_000)
    await h.step()
    expect((await h.deliveryOf(again)).state).toBe('completed')
    await expectReplayClean()
  })

  it('none at create; an unknown rule is a 400 naming the field', async () => {
    h.receiver.answer(redirecting)
    const { answer } = await create({ follow_redirects: 'none' })
    expect(answer.body.endpoint.follow_redirects).toBe('none')
    expect((await h.deliveryOf(await publish())).state).toBe('discarded')
    const bad = await api.call('POST', '/api/admin/webhooks', { token: admin, body: { url: h.receiver.url(), event_types: ['booking.*'], follow_redirects: 'all' } })
    expect(bad.status).toBe(400)
    expect(bad.body.field).toBe('follow_redirects')
    await expectReplayClean()
  })
})

describe('GET /.well-known/hookledger/keys/:endpoint_id', () => {
  const keys = (id: string, headers: Record<string, string> = {}) => api.call('GET', `/.well-known/hookledger/keys/${id}`, { headers })

  it('lists the current key, and the previous one with its expiry after a rotation; public and cacheable', async () => {
    const { id, answer } = await create({ signature_scheme: 'v1a', description: 'private', headers: { 'x-api-key': { value: SECRET, secret: true } } })
    const first = answer.body.endpoint.public_key as string
    const one = await keys(id)
    expect(one.status).toBe(200)
    expect(one.body).toEqual({ endpoint_id: id, keys: [{ public_key: first, key_id: expect.any(String), status: 'current', expires_at: null }] })
    expect(one.headers.get('cache-control')).toBe('public, max-age=300')
    const etag = one.headers.get('etag')!
    expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/)
    // Nothing else about the endpoint.
    for (const leak of [h.receiver.url(), 'private', h.owner, SECRET, 'x-api-key']) expect(one.text).not.toContain(leak)
    expect((await keys(id, { 'if-none-match': etag })).status).toBe(304)

    const rotated = await api.call('POST', `/api/admin/webhooks/${id}/rotate_secret`, { token: admin })
    const second = rotated.body.public_key as string
    const two = await keys(id, { 'if-none-match': etag })
    expect(two.status).toBe(200)
    expect(two.body.keys).toEqual([
      { public_key: second, key_id: expect.any(String), status: 'current', expires_at: null },
      { public_key: first, key_id: one.body.keys[0].key_id, status: 'previous', expires_at: rotated.body.previous_secret_expires_at },
    ])
    expect(two.headers.get('etag')).not.toBe(etag)
    // The key ids are the ones attempts' signed_with names.
    await publish()
    const delivery = (await api.call('GET', `/api/admin/webhooks/${id}/deliveries`, { token: admin })).body.data[0]
    const attempt = (await api.call('GET', `/api/admin/deliveries/${delivery.id}/attempts`, { token: admin })).body.data[0]
    expect(attempt.signed_with).toEqual(two.body.keys.map((k: { key_id: string }) => k.key_id))

    // Past the grace window only the current key is left.
    h.clock.advance(24 * 3_600_000 + 1_000)
    expect((await keys(id)).body.keys.map((k: { status: string }) => k.status)).toEqual(['current'])
    await expectReplayClean()
  })

  it('404 for an unknown, a deleted or a v1-only endpoint; 400 naming endpoint_id for a malformed id', async () => {
    const v1 = await create({})
    const gone = await create({ signature_scheme: 'v1+v1a' })
    expect((await keys(gone.id)).status).toBe(200)
    await api.call('DELETE', `/api/admin/webhooks/${gone.id}`, { token: admin })
    for (const id of [v1.id, gone.id, '00000000-0000-4000-8000-000000000000']) {
      const answer = await keys(id)
      expect(answer.status).toBe(404)
      expect(answer.contentType).toContain('application/problem+json')
      expect(answer.body.code).toBe('not_found')
    }
    const bad = await keys('not-a-uuid')
    expect(bad.status).toBe(400)
    expect(bad.body).toMatchObject({ code: 'invalid_input', field: 'endpoint_id' })
  })
})
