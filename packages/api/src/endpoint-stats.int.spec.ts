import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { sql } from 'kysely'
import { endpointAttemptsQuery } from '@hookledger/store'
import { adminDbOf, bypassLedgerGuards, engineHarness, type EngineHarness, testApi, type TestApi } from '@hookledger/testkit'

let h: EngineHarness
let api: TestApi
let admin: string

beforeEach(async () => {
  h = await engineHarness({ start: '2026-03-01T00:10:00Z' })
  api = testApi(h.db, { clock: h.clock, secretBox: h.secretBox })
  admin = await api.token(h.owner, ['admin', 'publish'])
})
afterEach(() => h.close())

const stats = (id: string, query = '', token = admin) => api.call('GET', `/api/admin/webhooks/${id}/stats${query}`, { token })
const HOUR = 3_600_000

/**
 * Steps until no delivery waits: one delivery is in flight per endpoint, and after the discard
 * the failing endpoint's new deliveries wait out a 5-minute cool-down (the clock moves 1 minute
 * a step; all within the same hour).
 */
async function settle() {
  for (let i = 0; i < 15; i++) {
    await h.step()
    const waiting = await sql<{ n: number }>`select count(*)::int as n from deliveries where state not in ('completed', 'discarded')`.execute(h.db)
    if (waiting.rows[0]!.n === 0) return
    h.clock.advance(60_000)
  }
  throw new Error('deliveries still waiting after 15 steps')
}

/** Endpoint a (booking.*) gets a completed and a discarded attempt at 00:10, a completed one at 02:30; b gets one of its own. */
async function attemptsOverTwoHours() {
  h.receiver.answer((req) => ({ status: JSON.parse(req.body).type === 'booking.cancelled' ? 422 : 204 }))
  const a = (await h.createEndpoint({ event_types: ['booking.*'] })).endpoint
  const b = (await h.createEndpoint({ event_types: ['access_request.*'] })).endpoint
  await h.publish({ id: 'e1', type: 'booking.created' })
  await h.publish({ id: 'e2', type: 'booking.cancelled' })
  await h.publish({ id: 'e3', type: 'access_request.created' })
  await settle()
  h.clock.advance(2 * HOUR + 20 * 60_000)
  await h.publish({ id: 'e4', type: 'booking.created' })
  await settle()
  return { a, b }
}

describe('webhooks.stats: endpoint health from the attempt history', () => {
  it('24h: hourly buckets by outcome, success rate and latency, this endpoint only', async () => {
    const { a, b } = await attemptsOverTwoHours()
    const res = await stats(a.id, '?window=24h')
    expect(res.status, res.text).toBe(200)
    const s = res.body
    expect(s).toMatchObject({ window: '24h', since: '2026-02-28T03:00:00.000Z', until: h.clock.now().toISOString(), bucket_seconds: 3600, attempts: 3 })
    expect(s.outcomes).toEqual({ completed: 2, retry_scheduled: 0, snoozed: 0, discarded: 1, interrupted: 0 })
    expect(s.success_rate).toBeCloseTo(2 / 3)
    expect(s.latency_ms.p50).toBeGreaterThanOrEqual(0)
    expect(s.latency_ms.p95).toBeGreaterThanOrEqual(s.latency_ms.p50)
    expect(s.buckets).toHaveLength(24)
    const at = (start: string) => s.buckets.find((x: any) => x.start === start)
    expect(at('2026-03-01T00:00:00.000Z')).toMatchObject({ attempts: 2, success_rate: 0.5, outcomes: { completed: 1, discarded: 1 } })
    expect(at('2026-03-01T01:00:00.000Z')).toMatchObject({ attempts: 0, success_rate: null })
    expect(at('2026-03-01T02:00:00.000Z')).toMatchObject({ attempts: 1, success_rate: 1 })
    // The default window is 24h; the other endpoint counts only its own.
    expect((await stats(a.id)).body.attempts).toBe(3)
    expect((await stats(b.id)).body).toMatchObject({ attempts: 1, outcomes: { completed: 1 } })
  })

  it('7d: 6-hourly buckets; the window moves with the injected clock', async () => {
    const { a } = await attemptsOverTwoHours()
    const week = (await stats(a.id, '?window=7d')).body
    expect(week).toMatchObject({ window: '7d', bucket_seconds: 21600, attempts: 3, since: '2026-02-22T06:00:00.000Z' })
    expect(week.buckets).toHaveLength(28)
    expect(week.buckets.at(-1)).toMatchObject({ start: '2026-03-01T00:00:00.000Z', attempts: 3 })
    h.clock.advance(25 * HOUR)
    expect((await stats(a.id, '?window=24h')).body).toMatchObject({ attempts: 0, success_rate: null, latency_ms: { p50: null, p95: null } })
    expect((await stats(a.id, '?window=7d')).body.attempts).toBe(3)
  })

  it('another owner’s endpoint is a 404; a bad window a 400 naming it', async () => {
    const { a } = await attemptsOverTwoHours()
    const other = await api.token('someone_else', ['admin'])
    expect((await stats(a.id, '', other)).status).toBe(404)
    expect((await stats('00000000-0000-4000-8000-000000000000')).status).toBe(404)
    for (const [query, field] of [['?window=30d', 'window'], ['?window=', 'window'], ['?from=1', 'from']] as const) {
      const res = await stats(a.id, query)
      expect(res.status, query).toBe(400)
      expect(res.contentType).toContain('application/problem+json')
      expect(res.body.field, query).toBe(field)
    }
    expect((await stats(a.id, '?window=30d')).body.detail).toBe('window: must be one of 24h, 7d')
    expect((await stats('nope')).body.field).toBe('id')
  })

  it('reads one endpoint’s window through its index, not the whole ledger (EXPLAIN)', async () => {
    const endpoint = (await h.createEndpoint()).endpoint
    // Many attempts of many endpoints, and other entries, for the planner to prefer the index.
    await bypassLedgerGuards(h.db, (trx) =>
      sql`
        insert into ledger (occurred_at, owner_id, kind, endpoint_id, delivery_id, event_id, payload, actor)
        select now() - (i || ' seconds')::interval, 'default',
          case when i % 3 = 0 then 'delivery.claimed' else 'delivery.attempted' end,
          case when i % 50 = 0 then ${endpoint.id}::uuid else gen_random_uuid() end,
          gen_random_uuid(), 'evt_' || i,
          jsonb_build_object('outcome', 'completed', 'duration_ms', i % 900), 'system'
        from generate_series(1, 30000) i
      `.execute(trx),
    )
    await sql`analyze ledger`.execute(adminDbOf(h.db))
    const now = new Date()
    const q = endpointAttemptsQuery('default', endpoint.id, new Date(now.getTime() - 7 * 24 * HOUR), now)
    const plan = (await sql<{ 'QUERY PLAN': string }>`explain ${q}`.execute(h.db)).rows.map((r) => r['QUERY PLAN']).join('\n')
    console.log(`EXPLAIN webhooks.stats (one endpoint, 7d):\n${plan}`)
    expect(plan).toMatch(/Index (Only )?Scan using \S*(endpoint_attempts_idx|endpoint_id_occurred_at_idx)|Bitmap Index Scan on \S*(endpoint_attempts_idx|endpoint_id_occurred_at_idx)/)
    // Empty partitions (made ahead, the default one) may be seq-scanned at no cost; none with rows is.
    for (const line of plan.split('\n').filter((l) => l.includes('Seq Scan'))) expect(line).toMatch(/cost=0\.00\.\.0\.0\d rows=1 /)
  })
})
