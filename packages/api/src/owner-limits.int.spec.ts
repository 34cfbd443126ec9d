import { sql } from 'kysely'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { bypassLedgerGuards, dbFingerprint, engineHarness, type EngineHarness, testApi, type TestApi } from '@hookledger/testkit'

let h: EngineHarness
let api: TestApi
let operator: string
let admin: string
const START = '2026-03-01T00:00:00.000Z'

beforeEach(async () => {
  h = await engineHarness({ start: START })
  api = testApi(h.db, { clock: h.clock, secretBox: h.secretBox })
  operator = await api.token('*', ['operator'])
  admin = await api.token(h.owner, ['admin', 'publish'])
})
afterEach(() => h.close())

const limits = (body: Record<string, unknown>, owner = h.owner) => api.call('PUT', `/api/operator/owners/${owner}/limits`, { token: operator, body })
const publish = (id: string) =>
  api.call('POST', '/api/events', { token: admin, body: { id, type: 'booking.created', subject: `booking://${id}`, data: { booking_id: id } } })
const expectReplayClean = async () => expect((await h.replay()).differences).toEqual([])

async function drain() {
  for (let i = 0; i < 10; i++) {
    const r = await h.step()
    if (r.fannedOut + r.claimed === 0) return
  }
}

describe('owners: limits, set and read', () => {
  it('an owner nothing set has the defaults; a subset of limits changes only those, null clears; usage counts', async () => {
    const fresh = await api.call('GET', `/api/operator/owners/${h.owner}`, { token: operator })
    expect(fresh.status).toBe(200)
    expect(fresh.body).toMatchObject({ id: h.owner, weight: 1, publish_per_second: null, max_endpoints: null, suspended: null })
    await h.createEndpoint()
    expect((await publish('evt_1')).status).toBe(202)
    await drain()
    expect((await limits({ publish_per_second: 50, max_endpoints: 10, weight: 3 })).body).toMatchObject({ publish_per_second: 50, max_endpoints: 10, weight: 3, max_in_flight: null })
    const second = await limits({ max_in_flight: 4, max_endpoints: null })
    expect(second.status).toBe(200)
    expect(second.body).toMatchObject({ publish_per_second: 50, max_endpoints: null, weight: 3, max_in_flight: 4 })
    const list = await api.call('GET', '/api/operator/owners', { token: operator })
    expect(list.status).toBe(200)
    const mine = list.body.data.find((o: { id: string }) => o.id === h.owner)
    expect(mine.usage).toEqual({ endpoints: 1, backlog: 0, deliveries_24h: 1, attempts_24h: 1, at_least: [] })
    // Each change is one entry naming only what changed.
    const entries = (await sql<{ kind: string; payload: unknown }>`select kind, payload from ledger where kind like 'owner.%' order by position`.execute(h.db)).rows
    expect(entries).toEqual([
      { kind: 'owner.limits_set', payload: { limits: { publish_per_second: 50, max_endpoints: 10, weight: 3 } } },
      { kind: 'owner.limits_set', payload: { limits: { max_in_flight: 4, max_endpoints: null } } },
    ])
    await expectReplayClean()
  })

  it('bad limits are a 400 problem naming the field; a publish or admin token cannot set them', async () => {
    const bad = await limits({ weight: 0 })
    expect(bad.status).toBe(400)
    expect(bad.contentType).toContain('application/problem+json')
    expect(bad.body.field).toBe('weight')
    expect((await limits({ burst: 3 })).status).toBe(400)
    expect((await api.call('PUT', `/api/operator/owners/${h.owner}/limits`, { token: admin, body: { weight: 2 } })).status).toBe(403)
  })

  it('replay rebuilds the owners table from its entries and names a row changed behind its back', async () => {
    await limits({ publish_per_second: 5, publish_burst: 10 })
    expect((await api.call('POST', `/api/operator/owners/${h.owner}/suspend`, { token: operator, body: { reason: 'unpaid' } })).status).toBe(200)
    await expectReplayClean()
    await bypassLedgerGuards(h.db, (trx) => sql`update owners set publish_burst = 1000, suspended_at = null`.execute(trx))
    const { differences } = await h.replay()
    expect(differences).toEqual([expect.objectContaining({ table: 'owners', key: h.owner, kind: 'changed' })])
  })
})

describe('owners: the publish limit', () => {
  it('over the limit: 429 with Retry-After and retry_at on the injected clock, nothing written; from then on it publishes', async () => {
    await limits({ publish_per_second: 1, publish_burst: 2 })
    expect((await publish('evt_1')).status).toBe(202)
    expect((await publish('evt_2')).status).toBe(202)
    const before = await dbFingerprint(h.db)
    const refused = await publish('evt_3')
    expect(refused.status).toBe(429)
    expect(refused.contentType).toContain('application/problem+json')
    expect(refused.headers.get('retry-after')).toBe('1')
    expect(refused.body).toMatchObject({ code: 'owner_rate_limited', retry_at: '2026-03-01T00:00:01.000Z' })
    expect(refused.body.detail).toContain('2026-03-01T00:00:01.000Z')
    expect(await dbFingerprint(h.db)).toEqual(before)
    h.clock.advance(999)
    expect((await publish('evt_3')).status).toBe(429)
    h.clock.advance(1)
    expect((await publish('evt_3')).status).toBe(202)
    // Cleared: no limit at all.
    await limits({ publish_per_second: null })
    for (const id of ['evt_4', 'evt_5', 'evt_6']) expect((await publish(id)).status).toBe(202)
    await expectReplayClean()
  })
})

describe('owners: a refusal remembered by the API process', () => {
  it('an owner over its limit is answered from the refusal until its bucket could admit, at most a second: a raised limit is seen within it', async () => {
    // One event every 100 s: refused with retry_at 100 s on, remembered for 1 s only.
    await limits({ publish_per_second: 0.01, publish_burst: 1 })
    expect((await publish('evt_1')).status).toBe(202)
    const refused = await publish('evt_2')
    expect(refused.status).toBe(429)
    expect(refused.body.retry_at).toBe('2026-03-01T00:01:40.000Z')
    await limits({ publish_per_second: 100 })
    // Within the second: the same refusal, from memory (the database would admit now).
    const remembered = await publish('evt_2')
    expect(remembered.status).toBe(429)
    expect(remembered.contentType).toContain('application/problem+json')
    expect(remembered.headers.get('retry-after')).toBe('100')
    expect(remembered.body).toMatchObject({ code: 'owner_rate_limited', retry_at: '2026-03-01T00:01:40.000Z' })
    h.clock.advance(1_000)
    expect((await publish('evt_2')).status).toBe(202)
    await expectReplayClean()
  })
})

describe('owners: the publish limit across API processes', () => {
  it('two API instances publishing at once admit exactly the burst: the bucket is the database row', async () => {
    await limits({ publish_per_second: 1, publish_burst: 3 })
    const other = testApi(h.db, { clock: h.clock, secretBox: h.secretBox })
    const via = [api, other]
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        via[i % 2]!.call('POST', '/api/events', { token: admin, body: { id: `evt_${i}`, type: 'booking.created', subject: `booking://${i}`, data: {} } }),
      ),
    )
    const statuses = answers.map((a) => a.status).sort()
    expect(statuses).toEqual([...Array(3).fill(202), ...Array(9).fill(429)])
    expect(Number((await sql<{ n: string }>`select count(*) as n from events`.execute(h.db)).rows[0]!.n)).toBe(3)
  })
})

describe('owners: suspension', () => {
  it('a suspended owner publishes nothing (403 owner_suspended); what was queued is kept and goes after resume; nothing is lost', async () => {
    await h.createEndpoint()
    expect((await publish('evt_before')).status).toBe(202)
    const suspended = await api.call('POST', `/api/operator/owners/${h.owner}/suspend`, { token: operator, body: { reason: 'abuse report 42' } })
    expect(suspended.status).toBe(200)
    expect(suspended.body.suspended).toEqual({ at: START, reason: 'abuse report 42' })
    const before = await dbFingerprint(h.db)
    const refused = await publish('evt_during')
    expect(refused.status).toBe(403)
    expect(refused.body).toMatchObject({ code: 'owner_suspended' })
    expect(refused.body.detail).toContain('abuse report 42')
    expect(await dbFingerprint(h.db)).toEqual(before)
    h.clock.advance(60_000)
    const resumed = await api.call('POST', `/api/operator/owners/${h.owner}/resume`, { token: operator })
    expect(resumed.status).toBe(200)
    expect(resumed.body.suspended).toBeNull()
    expect((await publish('evt_during')).status).toBe(202)
    await drain()
    expect(h.receiver.requests.map((r) => r.headers['webhook-id']).sort()).toEqual(['evt_before', 'evt_during'])
    expect((await h.deliveryOf('evt_before')).state).toBe('completed')
    await expectReplayClean()
  })
})

describe('owners: max_endpoints', () => {
  it('creating an endpoint over the limit is a 409 problem saying so; deleting one makes room', async () => {
    await limits({ max_endpoints: 1 })
    const body = { url: h.receiver.url(), event_types: ['booking.*'] }
    const first = await api.call('POST', '/api/admin/webhooks', { token: admin, body })
    expect(first.status).toBe(201)
    const over = await api.call('POST', '/api/admin/webhooks', { token: admin, body })
    expect(over.status).toBe(409)
    expect(over.contentType).toContain('application/problem+json')
    expect(over.body.code).toBe('endpoint_limit_reached')
    expect(over.body.detail).toContain('max_endpoints 1')
    expect((await api.call('DELETE', `/api/admin/webhooks/${first.body.endpoint.id}`, { token: admin })).status).toBeLessThan(300)
    expect((await api.call('POST', '/api/admin/webhooks', { token: admin, body })).status).toBe(201)
  })
})
