import { Webhook } from 'standardwebhooks'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { sql } from 'kysely'
import { engineHarness, type EngineHarness, testApi, type TestApi } from '@hookledger/testkit'

let h: EngineHarness
let api: TestApi
let admin: string

beforeEach(async () => {
  // The real date: the signature's timestamp is checked against now by the verifier.
  h = await engineHarness({ start: new Date().toISOString() })
  api = testApi(h.db, { clock: h.clock, secretBox: h.secretBox })
  admin = await api.token(h.owner, ['admin', 'publish'])
})
afterEach(() => h.close())

async function setUp(reply: Parameters<EngineHarness['receiver']['answer']>[0]) {
  h.receiver.answer(reply)
  const created = await api.call('POST', '/api/admin/webhooks', {
    token: admin,
    body: { url: h.receiver.url(), event_types: ['booking.*'] },
  })
  expect(created.status, created.text).toBe(201)
  const published = await api.call('POST', '/api/events', {
    token: admin,
    body: { id: 'evt_detail', type: 'booking.created', subject: 'booking://1', data: { booking_id: '1' } },
  })
  expect(published.status).toBe(202)
  await h.step()
  const delivery = await h.deliveryOf('evt_detail')
  const attempts = await api.call('GET', `/api/admin/deliveries/${delivery.id}/attempts`, { token: admin })
  expect(attempts.status, attempts.text).toBe(200)
  return { secret: created.body.secret as string, delivery, attempts: attempts.body.data as any[] }
}

describe('webhooks.attempts: request and response of each attempt', () => {
  it('shows the request exactly as the receiver got it (it verifies) and the answer with its headers', async () => {
    const { secret, attempts } = await setUp({ status: 500, headers: { 'x-request-id': 'req-7', 'content-type': 'text/plain' }, body: 'database down' })
    const [a] = attempts
    const got = h.receiver.requests[0]!
    expect(a.request.url).toBe(h.receiver.url())
    expect(a.request.body).toBe(got.body)
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature', 'content-type', 'content-length', 'user-agent']) {
      expect(a.request.headers[name], name).toBe(got.headers[name])
    }
    expect(new Webhook(secret).verify(a.request.body, a.request.headers)).toMatchObject({ id: 'evt_detail' })
    expect(JSON.stringify(a)).not.toContain(secret.slice(6))
    expect(a.response).toEqual({
      status_code: 500,
      headers: { 'x-request-id': 'req-7', 'content-type': 'text/plain' },
      body: 'database down',
      truncated: false,
    })
    expect(a.error).toBe('HTTP 500')
  })

  it('a body over 4 KiB is cut and marked truncated', async () => {
    const { attempts } = await setUp({ status: 200, body: 'x'.repeat(10_000) })
    expect(attempts[0].response.body).toHaveLength(4096)
    expect(attempts[0].response.truncated).toBe(true)
  })

  it('no answer: response null, error says why', async () => {
    // A port nothing listens on: the receiver closed.
    h.receiver.answer({ status: 200 })
    const created = await api.call('POST', '/api/admin/webhooks', {
      token: admin,
      body: { url: 'http://127.0.0.1:9/hook', event_types: ['booking.*'] },
    })
    expect(created.status).toBe(201)
    await api.call('POST', '/api/events', { token: admin, body: { id: 'evt_refused', type: 'booking.created', subject: 'booking://2' } })
    await h.step()
    const delivery = await h.deliveryOf('evt_refused')
    const res = await api.call('GET', `/api/admin/deliveries/${delivery.id}/attempts`, { token: admin })
    expect(res.body.data[0].response).toBeNull()
    expect(res.body.data[0].error).toMatch(/^connection_error/)
    expect(res.body.data[0].request.url).toBe('http://127.0.0.1:9/hook')
  })

  it('an attempt made before a URL change shows the URL it went to', async () => {
    const { delivery } = await setUp({ status: 500 })
    await api.call('PATCH', `/api/admin/webhooks/${delivery.endpoint_id}`, { token: admin, body: { url: 'http://127.0.0.1:9/new' } })
    const res = await api.call('GET', `/api/admin/deliveries/${delivery.id}/attempts`, { token: admin })
    expect(res.body.data[0].request.url).toBe(h.receiver.url())
  })

  it('costs: the bytes the answer headers add to a delivery.attempted entry (printed for the docs)', async () => {
    const { delivery } = await setUp({ status: 200, headers: { 'content-type': 'application/json' }, body: '{"ok":true}' })
    const row = (
      await sql<{ with_headers: number; without: number; headers: unknown }>`
        select pg_column_size(payload) as with_headers,
          pg_column_size(payload - 'response_headers' - 'response_truncated') as without,
          payload -> 'response_headers' as headers
        from ledger where delivery_id = ${delivery.id}::uuid and kind = 'delivery.attempted'
      `.execute(h.db)
    ).rows[0]!
    const added = row.with_headers - row.without
    console.log(`delivery.attempted: ${row.without} B before, +${added} B for ${JSON.stringify(row.headers)}`)
    // A typical answer's kept headers: content-type and content-length (date, connection and
    // keep-alive are not kept). Capped at 16 headers / 1 KiB whatever the receiver sends.
    expect(added).toBeLessThanOrEqual(90)
  })
})
