import { sql } from 'kysely'
import { Webhook } from 'standardwebhooks'
import nacl from 'tweetnacl'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { decodeV1aPublicKey, parseV1aSecretKey, v1aKeyId, type Logger } from '@hookledger/core'
import { engineHarness, type EngineHarness, type ReceivedRequest, testApi, type ApiAnswer, type TestApi } from '@hookledger/testkit'

/** Every line the API and the dispatcher log, as JSON. */
const logLines: string[] = []
const capturingLogger: Logger = {
  debug: (obj, msg) => void logLines.push(JSON.stringify({ level: 'debug', msg, ...obj })),
  info: (obj, msg) => void logLines.push(JSON.stringify({ level: 'info', msg, ...obj })),
  warn: (obj, msg) => void logLines.push(JSON.stringify({ level: 'warn', msg, ...obj })),
  error: (obj, msg) => void logLines.push(JSON.stringify({ level: 'error', msg, ...obj })),
}

let h: EngineHarness
let api: TestApi
let admin: string
beforeEach(async () => {
  logLines.length = 0
  h = await engineHarness({ start: new Date().toISOString(), logger: capturingLogger })
  api = testApi(h.db, { clock: h.clock, secretBox: h.secretBox, logger: capturingLogger })
  admin = await api.token(h.owner, ['admin', 'publish'])
})
afterEach(async () => {
  vi.useRealTimers()
  await h.close()
})

const GRACE_MS = 24 * 3_600_000
let seq = 0

async function createEndpoint(signature_scheme?: string): Promise<{ id: string; secret: string; publicKey: string | null; answer: ApiAnswer }> {
  const answer = await api.call('POST', '/api/admin/webhooks', {
    token: admin,
    body: { url: h.receiver.url(), event_types: ['booking.*'], ...(signature_scheme ? { signature_scheme } : {}) },
  })
  expect(answer.status).toBe(201)
  return { id: answer.body.endpoint.id, secret: answer.body.secret, publicKey: answer.body.endpoint.public_key, answer }
}

/** Publishes one event, runs the dispatcher, and returns the (last) request the receiver got. */
async function deliverOne(endpoints = 1): Promise<ReceivedRequest> {
  const before = h.receiver.requests.length
  const id = `evt_v1a_${++seq}`
  const published = await api.call('POST', '/api/events', {
    token: admin,
    body: { id, type: 'booking.created', subject: `booking://${seq}`, data: { booking_id: String(seq) } },
  })
  expect(published.status).toBe(202)
  await h.step()
  expect(h.receiver.requests).toHaveLength(before + endpoints)
  return h.receiver.requests.at(-1)!
}

const entriesOf = (req: ReceivedRequest) => String(req.headers['webhook-signature']).split(' ')
const v1aEntries = (req: ReceivedRequest) => entriesOf(req).filter((e) => e.startsWith('v1a,'))

/** A receiver holding only `whpk_…`, verifying with tweetnacl (an independent ed25519). */
function v1aVerifies(entry: string, publicKey: string, req: ReceivedRequest): boolean {
  const signed = `${req.headers['webhook-id']}.${req.headers['webhook-timestamp']}.${req.body}`
  return nacl.sign.detached.verify(
    new Uint8Array(Buffer.from(signed, 'utf8')),
    new Uint8Array(Buffer.from(entry.slice('v1a,'.length), 'base64')),
    decodeV1aPublicKey(publicKey),
  )
}

/** A receiver holding `whsec_…`, verifying with the standardwebhooks library at the signing time. */
function v1Verifies(secret: string, req: ReceivedRequest): boolean {
  vi.useFakeTimers({ toFake: ['Date'] })
  vi.setSystemTime(Number(req.headers['webhook-timestamp']) * 1000)
  try {
    new Webhook(secret).verify(req.body, req.headers as Record<string, string>)
    return true
  } catch {
    return false
  } finally {
    vi.useRealTimers()
  }
}

describe('v1a signatures, end to end', () => {
  it('a v1a endpoint: one v1a entry that verifies with tweetnacl against the whpk_ of the create answer, and no v1', async () => {
    const { id, secret, publicKey } = await createEndpoint('v1a')
    expect(publicKey).toMatch(/^whpk_[A-Za-z0-9+/]{43}=$/)
    const got = await api.call('GET', `/api/admin/webhooks/${id}`, { token: admin })
    expect(got.body).toMatchObject({ signature_scheme: 'v1a', public_key: publicKey })

    const req = await deliverOne()
    expect(entriesOf(req)).toHaveLength(1)
    expect(v1aVerifies(entriesOf(req)[0]!, publicKey!, req)).toBe(true)
    expect(v1Verifies(secret, req)).toBe(false)
    const deliveries = await api.call('GET', `/api/admin/webhooks/${id}/deliveries`, { token: admin })
    const attempts = await api.call('GET', `/api/admin/deliveries/${deliveries.body.data[0].id}/attempts`, { token: admin })
    expect(attempts.body.data[0].signed_with).toEqual([v1aKeyId(publicKey!)])
    expect((await h.replay()).differences).toEqual([])
  })

  it('a v1+v1a endpoint carries both, and each verifies with its own key', async () => {
    const { secret, publicKey } = await createEndpoint('v1+v1a')
    const req = await deliverOne()
    expect(entriesOf(req).map((e) => e.split(',')[0])).toEqual(['v1', 'v1a'])
    expect(v1Verifies(secret, req)).toBe(true)
    expect(v1aVerifies(v1aEntries(req)[0]!, publicKey!, req)).toBe(true)
  })

  it('a v1 endpoint (the default) has no key pair and sends v1 only', async () => {
    const { secret, publicKey, answer } = await createEndpoint()
    expect(answer.body.endpoint).toMatchObject({ signature_scheme: 'v1', public_key: null })
    expect(publicKey).toBeNull()
    const req = await deliverOne()
    expect(entriesOf(req)).toHaveLength(1)
    expect(v1Verifies(secret, req)).toBe(true)
  })

  it('update v1 → v1+v1a gives the endpoint a key pair (in the answer) and both signatures; back to v1 keeps the pair', async () => {
    const { id, secret } = await createEndpoint()
    const patched = await api.call('PATCH', `/api/admin/webhooks/${id}`, { token: admin, body: { signature_scheme: 'v1+v1a' } })
    expect(patched.status).toBe(200)
    const publicKey = patched.body.public_key as string
    expect(publicKey).toMatch(/^whpk_/)
    const req = await deliverOne()
    expect(v1Verifies(secret, req)).toBe(true)
    expect(v1aVerifies(v1aEntries(req)[0]!, publicKey, req)).toBe(true)

    const back = await api.call('PATCH', `/api/admin/webhooks/${id}`, { token: admin, body: { signature_scheme: 'v1' } })
    expect(back.body).toMatchObject({ signature_scheme: 'v1', public_key: publicKey })
    expect(v1aEntries(await deliverOne())).toEqual([])
    const bad = await api.call('PATCH', `/api/admin/webhooks/${id}`, { token: admin, body: { signature_scheme: 'v2' } })
    expect(bad.status).toBe(400)
    expect((await h.replay()).differences).toEqual([])
  })

  it('after a rotation, inside the grace window both keys sign and each verifies; after it only the new one', async () => {
    const { id, publicKey: oldKey } = await createEndpoint('v1a')
    const rotated = await api.call('POST', `/api/admin/webhooks/${id}/rotate_secret`, { token: admin })
    expect(rotated.status).toBe(200)
    const newKey = rotated.body.public_key as string
    expect(newKey).toMatch(/^whpk_/)
    expect(newKey).not.toBe(oldKey)
    expect((await api.call('GET', `/api/admin/webhooks/${id}`, { token: admin })).body.public_key).toBe(newKey)

    h.clock.advance(GRACE_MS - 60_000)
    const during = await deliverOne()
    const [first, second] = v1aEntries(during) as [string, string]
    expect(entriesOf(during)).toHaveLength(2)
    expect(v1aVerifies(first, newKey, during)).toBe(true)
    expect(v1aVerifies(second, oldKey!, during)).toBe(true)
    expect(v1aVerifies(first, oldKey!, during)).toBe(false)

    h.clock.advance(120_000)
    const after = await deliverOne()
    expect(entriesOf(after)).toHaveLength(1)
    expect(v1aVerifies(entriesOf(after)[0]!, newKey, after)).toBe(true)

    const attempts = await h.db.selectFrom('delivery_attempts').select(['signed_with']).orderBy('ledger_position').execute()
    expect(attempts.map((a) => a.signed_with)).toEqual([[v1aKeyId(newKey), v1aKeyId(oldKey!)], [v1aKeyId(newKey)]])
    expect((await h.replay()).differences).toEqual([])
  })

  it('no answer, log line or table holds a whsk_ key in clear (in any encoding)', async () => {
    const operator = await api.token('', ['operator'])
    const a = await createEndpoint('v1+v1a')
    const b = await createEndpoint()
    const answers: ApiAnswer[] = [a.answer, b.answer]
    answers.push(await api.call('PATCH', `/api/admin/webhooks/${b.id}`, { token: admin, body: { signature_scheme: 'v1a' } }))
    answers.push(await api.call('POST', `/api/admin/webhooks/${a.id}/rotate_secret`, { token: admin }))
    await deliverOne(2)
    // Every private key there ever was: the current and previous ones, opened from their seals.
    const sealed = (
      await sql<{ k: Uint8Array | null }>`
        select v1a_key_sealed as k from endpoints union all select prev_v1a_key_sealed from endpoints
      `.execute(h.db)
    ).rows.flatMap((r) => (r.k ? [h.secretBox.open(r.k)] : []))
    expect(sealed).toHaveLength(3)
    const leaks = sealed.flatMap((key) => {
      const { seed } = parseV1aSecretKey(key)
      const body = key.slice('whsk_'.length)
      return [key, body, Buffer.from(body, 'base64').toString('hex'), Buffer.from(seed).toString('hex'), Buffer.from(seed).toString('base64'), Buffer.from(seed).toString('base64url')]
    })
    const deliveries = await api.call('GET', `/api/admin/webhooks/${a.id}/deliveries`, { token: admin })
    answers.push(
      deliveries,
      await api.call('GET', '/api/admin/webhooks', { token: admin }),
      await api.call('GET', `/api/admin/webhooks/${a.id}`, { token: admin }),
      await api.call('GET', `/api/admin/deliveries/${deliveries.body.data[0].id}/attempts`, { token: admin }),
      await api.call('GET', '/api/operator/ledger?limit=200', { token: operator }),
      await api.call('GET', `/api/operator/ledger/audit?endpoint_id=${a.id}`, { token: operator }),
      await api.call('POST', '/api/operator/ledger/replay', { token: operator }),
      await api.call('GET', '/api/openapi.json'),
    )
    for (const answer of answers) {
      expect(answer.status).toBeLessThan(300)
      expect(answer.text).not.toContain('whsk_')
      for (const leak of leaks) expect(answer.text).not.toContain(leak)
    }
    // The receiver got nothing private either.
    const wire = h.receiver.requests.map((r) => JSON.stringify(r.headers) + r.body).join('\n')
    for (const leak of ['whsk_', ...leaks]) expect(wire).not.toContain(leak)
    for (const line of logLines) for (const leak of ['whsk_', ...leaks]) expect(line).not.toContain(leak)

    // Every text, bytea, jsonb and array column of every table; bytea also as escaped bytes, so
    // a key stored unsealed would read as `whsk_…` there.
    const columns = (
      await sql<{ table: string; column: string; type: string }>`
        select c.table_name as table, c.column_name as column, c.data_type as type
        from information_schema.columns c join information_schema.tables t using (table_schema, table_name)
        where c.table_schema = current_schema() and t.table_type = 'BASE TABLE'
          and c.data_type in ('text', 'bytea', 'jsonb', 'json', 'ARRAY', 'character varying')
      `.execute(h.db)
    ).rows
    expect(columns.map((c) => `${c.table}.${c.column}`)).toEqual(
      expect.arrayContaining(['endpoints.v1a_key_sealed', 'endpoints.v1a_public_key', 'ledger.payload']),
    )
    let values = 0
    for (const { table, column, type } of columns) {
      const rendered =
        type === 'bytea'
          ? sql<{ v: string }>`select ${sql.ref(column)}::text || ' ' || encode(${sql.ref(column)}, 'escape') as v from ${sql.table(table)} where ${sql.ref(column)} is not null`
          : sql<{ v: string }>`select ${sql.ref(column)}::text as v from ${sql.table(table)} where ${sql.ref(column)} is not null`
      const text = (await rendered.execute(h.db)).rows.map((r) => r.v).join('\n')
      values += text.length > 0 ? 1 : 0
      for (const leak of ['whsk_', ...leaks]) expect(text, `${table}.${column} holds a private key`).not.toContain(leak)
    }
    expect(values).toBeGreaterThan(10)
    // …while the public keys are there, as they should be.
    const publicKeys = (await sql<{ k: string }>`select v1a_public_key as k from endpoints where v1a_public_key is not null`.execute(h.db)).rows
    expect(publicKeys).toHaveLength(2)
  })
})
