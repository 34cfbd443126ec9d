import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { eventPrune } from '@hookledger/store'
import { dbFingerprint, engineHarness, type EngineHarness, testApi, type TestApi } from '@hookledger/testkit'

let h: EngineHarness
let api: TestApi
let admin: string
const START = '2026-03-01T00:00:00.000Z'

beforeEach(async () => {
  h = await engineHarness({ start: START })
  api = testApi(h.db, { clock: h.clock, secretBox: h.secretBox })
  admin = await api.token(h.owner, ['admin', 'publish'])
})
afterEach(() => h.close())

const recover = (id: string, body: Record<string, unknown>, token = admin) =>
  api.call('POST', `/api/admin/webhooks/${id}/recover`, { token, body })
const patch = (id: string, body: Record<string, unknown>) => api.call('PATCH', `/api/admin/webhooks/${id}`, { token: admin, body })

/** Drains: one delivery in flight per endpoint, so a step sends one each. */
async function drain() {
  for (let i = 0; i < 10; i++) {
    const r = await h.step()
    if (r.fannedOut + r.claimed === 0) return
  }
}

/**
 * evt_1 delivered; evt_c (conversation.started) not subscribed then; evt_2 discarded (410);
 * then disabled: evt_3, evt_4 (booking.*) and evt_w (writing.published, never matched) missed;
 * then enabled with conversation.started added. Disabling published webhook.endpoint.disabled,
 * an opt-in type booking.* does not name: 7 events in all, 2 never matched.
 */
async function missedWhileDisabled() {
  const { endpoint } = await h.createEndpoint({ event_types: ['booking.*'] })
  await h.publish({ id: 'evt_1' })
  await h.publish({ id: 'evt_c', type: 'conversation.started' })
  await drain()
  h.receiver.answer({ status: 410 })
  h.clock.advance(1_000)
  await h.publish({ id: 'evt_2' })
  await drain()
  expect((await h.deliveryOf('evt_2')).state).toBe('discarded')
  h.receiver.answer({ status: 204 })
  h.clock.advance(60_000)
  expect((await patch(endpoint.id, { enabled: false })).status).toBe(200)
  h.clock.advance(60_000)
  await h.publish({ id: 'evt_3' })
  await h.publish({ id: 'evt_4', type: 'booking.cancelled' })
  await h.publish({ id: 'evt_w', type: 'writing.published' })
  await drain()
  h.clock.advance(60_000)
  expect((await patch(endpoint.id, { enabled: true, event_types: ['booking.*', 'conversation.started'] })).status).toBe(200)
  expect(h.receiver.requests.map((r) => r.headers['webhook-id'])).toEqual(['evt_1', 'evt_2'])
  return endpoint
}

describe('webhooks.recover: deliver what an endpoint missed', () => {
  it('dry run counts and writes nothing; recover sends exactly the missed ones once; again finds nothing; the ledger replays clean', async () => {
    const endpoint = await missedWhileDisabled()
    const since = new Date(Date.parse(START) - 3_600_000).toISOString()

    const before = await dbFingerprint(h.db)
    const dry = await recover(endpoint.id, { since, dry_run: true })
    expect(dry.status, dry.text).toBe(200)
    expect(dry.body).toMatchObject({
      dry_run: true, since, until: h.clock.now().toISOString(), scanned: 7, would_enqueue: 4, enqueued: 0,
      already_delivered: 1, in_flight: 0, next_cursor: null,
      skipped: { not_subscribed: 2, event_pruned: 0, not_fanned_out_yet: 0, internal_event: 0, scope_denied: 0, delivery_retired: 0 },
    })
    const why = Object.fromEntries(dry.body.recovered.map((r: any) => [r.event_id, [r.action, r.missed]]))
    expect(why).toEqual({
      evt_c: ['new_delivery', 'not_subscribed'],
      evt_2: ['new_run', 'discarded'],
      evt_3: ['new_delivery', 'endpoint_disabled'],
      evt_4: ['new_delivery', 'endpoint_disabled'],
    })
    expect(await dbFingerprint(h.db)).toEqual(before)

    const res = await recover(endpoint.id, { since })
    expect(res.status, res.text).toBe(200)
    expect(res.body).toMatchObject({ dry_run: false, would_enqueue: 4, enqueued: 4, already_delivered: 1 })
    await drain()
    const ids = h.receiver.requests.map((r) => r.headers['webhook-id'])
    expect(ids.slice(0, 2)).toEqual(['evt_1', 'evt_2'])
    expect([...ids.slice(2)].sort()).toEqual(['evt_2', 'evt_3', 'evt_4', 'evt_c'])
    for (const e of ['evt_c', 'evt_2', 'evt_3', 'evt_4']) expect((await h.deliveryOf(e)).state).toBe('completed')

    const again = await recover(endpoint.id, { since })
    expect(again.body).toMatchObject({ would_enqueue: 0, enqueued: 0, already_delivered: 5, recovered: [] })
    await drain()
    expect(h.receiver.requests).toHaveLength(6)

    // The lineage and the actor are in the ledger, on the entries that moved the rows.
    const d3 = await h.deliveryOf('evt_3')
    const enq = (await h.ledgerOf('delivery_id', d3.id)).find((e) => e.kind === 'delivery.enqueued')!
    expect(enq.payload).toMatchObject({ recovered: { since, until: res.body.until, missed: 'endpoint_disabled' }, cool_down: false })
    expect(enq.actor).toMatch(/^owner:/)
    const d2 = await h.deliveryOf('evt_2')
    expect(d2.run).toBe(2)
    const red = (await h.ledgerOf('delivery_id', d2.id)).find((e) => e.kind === 'delivery.redelivered')!
    expect(red.payload).toMatchObject({ run: 2, previous_run: 1, previous_attempts: 1, recovered: { missed: 'discarded' } })
    expect(red.actor).toMatch(/^owner:/)
    expect(await h.replay()).toMatchObject({ differences: [] })
  })

  it('a batch per call: next_cursor continues the same window until null', async () => {
    const endpoint = await missedWhileDisabled()
    const since = new Date(Date.parse(START) - 3_600_000).toISOString()
    const until = h.clock.now().toISOString()
    let cursor: string | undefined
    let scanned = 0
    let enqueued = 0
    for (let i = 0; i < 5; i++) {
      const page = await recover(endpoint.id, { since, until, limit: 4, ...(cursor ? { cursor } : {}) })
      expect(page.status, page.text).toBe(200)
      scanned += page.body.scanned
      enqueued += page.body.enqueued
      cursor = page.body.next_cursor ?? undefined
      if (!cursor) break
    }
    expect({ scanned, enqueued, cursor }).toEqual({ scanned: 7, enqueued: 4, cursor: undefined })
    const bad = await recover(endpoint.id, { since, cursor: 'nope' })
    expect(bad.status).toBe(400)
    expect(bad.body).toMatchObject({ code: 'invalid_input', field: 'cursor' })
  })

  it('never sends what the fan-out would refuse today: a raw:// subject stays skipped (scope_denied)', async () => {
    const { endpoint } = await h.createEndpoint({ event_types: ['booking.*'] })
    await patch(endpoint.id, { enabled: false })
    await h.publish({ id: 'evt_raw', subject: 'raw://secret/1' })
    await h.publish({ id: 'evt_ok' })
    await drain()
    // The window is [since, until): until (now) must be past the events' publication.
    h.clock.advance(60_000)
    await patch(endpoint.id, { enabled: true })
    const res = await recover(endpoint.id, { since: new Date(Date.parse(START) - 3_600_000).toISOString() })
    expect(res.status, res.text).toBe(200)
    expect(res.body, res.text).toMatchObject({ skipped: { scope_denied: 1 } })
    expect(res.body.recovered.map((r: any) => r.event_id)).toEqual(['evt_ok'])
    await drain()
    expect(h.receiver.requests.map((r) => r.headers['webhook-id'])).toEqual(['evt_ok'])
  })

  it('a window past the event retention reports the pruned events, which cannot be sent', async () => {
    const { endpoint } = await h.createEndpoint({ event_types: ['booking.*'] })
    await patch(endpoint.id, { enabled: false })
    await h.publish({ id: 'evt_old' })
    await drain()
    await patch(endpoint.id, { enabled: true })
    h.clock.advance(31 * 86_400_000)
    expect(await eventPrune(h.db, { now: h.clock.now(), retentionMs: 30 * 86_400_000 })).toBeGreaterThanOrEqual(1)
    const res = await recover(endpoint.id, { since: new Date(Date.parse(START) - 3_600_000).toISOString(), until: new Date(Date.parse(START) + 86_400_000).toISOString() })
    expect(res.status, res.text).toBe(200)
    expect(res.body).toMatchObject({ scanned: 0, would_enqueue: 0, enqueued: 0 })
    expect(res.body.skipped.event_pruned).toBeGreaterThanOrEqual(1)
    expect(await h.replay()).toMatchObject({ differences: [] })
  })

  it('bad input → 400 naming the field; disabled or deleted → 409; unknown → 404', async () => {
    const { endpoint } = await h.createEndpoint()
    const cases: [Record<string, unknown>, string][] = [
      [{ since: '2026-03-01T00:00:00Z', until: '2026-02-28T00:00:00Z' }, 'until'],
      [{ since: 'yesterday' }, 'since'],
      [{ since: '2026-03-01' }, 'since'],
      [{ since: '2026-01-01T00:00:00Z' }, 'since'],
      [{ since: '2026-03-02T00:00:00Z' }, 'since'],
      [{ since: '2026-02-28T00:00:00Z', dry_run: 'yes' }, 'dry_run'],
      [{ since: '2026-02-28T00:00:00Z', limit: 5000 }, 'limit'],
      [{ since: '2026-02-28T00:00:00Z', extra: 1 }, 'extra'],
      [{}, 'since'],
    ]
    for (const [body, field] of cases) {
      const res = await recover(endpoint.id, body)
      expect(res.status, JSON.stringify(body)).toBe(400)
      expect(res.contentType).toContain('application/problem+json')
      expect(res.body, JSON.stringify(body)).toMatchObject({ code: 'invalid_input', field })
    }
    const query = await api.call('POST', `/api/admin/webhooks/${endpoint.id}/recover?dry_run=true`, { token: admin, body: { since: '2026-02-28T00:00:00Z' } })
    expect(query.status).toBe(400)

    await patch(endpoint.id, { enabled: false })
    const off = await recover(endpoint.id, { since: '2026-02-28T00:00:00Z' })
    expect(off.status).toBe(409)
    expect(off.body).toMatchObject({ code: 'endpoint_disabled' })
    await api.call('DELETE', `/api/admin/webhooks/${endpoint.id}`, { token: admin })
    const gone = await recover(endpoint.id, { since: '2026-02-28T00:00:00Z' })
    expect(gone.status).toBe(409)
    expect(gone.body).toMatchObject({ code: 'endpoint_deleted' })
    expect((await recover('00000000-0000-4000-8000-000000000000', { since: '2026-02-28T00:00:00Z' })).status).toBe(404)
    const other = await api.token('someone_else', ['admin'])
    expect((await recover(endpoint.id, { since: '2026-02-28T00:00:00Z' }, other)).status).toBe(404)
  })
})
