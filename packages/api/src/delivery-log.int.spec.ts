import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { sql } from 'kysely'
import { deliveryLogQuery } from '@hookledger/store'
import {
  adminDbOf,
  bypassLedgerGuards,
  engineHarness,
  forgeDeliveries,
  type EngineHarness,
  testApi,
  type TestApi,
} from '@hookledger/testkit'

let h: EngineHarness
let api: TestApi
let admin: string

beforeEach(async () => {
  h = await engineHarness({ start: '2026-03-01T00:00:00Z' })
  api = testApi(h.db, { clock: h.clock, secretBox: h.secretBox })
  admin = await api.token(h.owner, ['admin', 'publish'])
})
afterEach(() => h.close())

const log = (query: string, token = admin) => api.call('GET', `/api/admin/deliveries${query}`, { token })

async function twoEndpointsFourEvents() {
  const a = (await h.createEndpoint({ event_types: ['booking.*'] })).endpoint
  const b = (await h.createEndpoint({ event_types: ['*'] })).endpoint
  const stamps: string[] = []
  for (const [id, type] of [['e1', 'booking.created'], ['e2', 'booking.cancelled'], ['e3', 'booking.created'], ['e4', 'access_request.created']] as const) {
    stamps.push(h.clock.now().toISOString())
    await h.publish({ id, type })
    await h.step()
    h.clock.advance(60_000)
  }
  return { a, b, stamps }
}

describe('deliveries.list: the delivery log across endpoints', () => {
  it('lists every endpoint’s deliveries newest first, and filters by endpoint, state, type and time', async () => {
    h.receiver.answer((req) => ({ status: JSON.parse(req.body).type === 'booking.cancelled' ? 410 : 204 }))
    const { a, b, stamps } = await twoEndpointsFourEvents()
    const all = await log('')
    expect(all.status, all.text).toBe(200)
    expect(all.body.data.map((d: any) => d.event_id)).toEqual(['e4', 'e3', 'e3', 'e2', 'e2', 'e1', 'e1'])
    const ofA = await log(`?endpoint_id=${a.id}`)
    expect(ofA.body.data.map((d: any) => d.event_id)).toEqual(['e3', 'e2', 'e1'])
    expect(ofA.body.data.every((d: any) => d.endpoint_id === a.id)).toBe(true)
    const discarded = await log('?state=discarded&event_type=booking.cancelled')
    expect(discarded.body.data.map((d: any) => [d.event_id, d.state])).toEqual([['e2', 'discarded'], ['e2', 'discarded']])
    const window = await log(`?since=${stamps[1]}&until=${stamps[3]}&endpoint_id=${b.id}`)
    expect(window.body.data.map((d: any) => d.event_id)).toEqual(['e3', 'e2'])
  })

  it('pages with a cursor, never repeating or skipping', async () => {
    await twoEndpointsFourEvents()
    const seen: string[] = []
    let cursor: string | null = null
    do {
      const page: any = await log(`?limit=2${cursor ? `&cursor=${cursor}` : ''}`)
      expect(page.status).toBe(200)
      seen.push(...page.body.data.map((d: any) => d.id))
      cursor = page.body.next_cursor
    } while (cursor)
    const all = await log('?limit=200')
    expect(seen).toEqual(all.body.data.map((d: any) => d.id))
    expect(seen).toHaveLength(7)
  })

  it('another owner’s endpoint is a 404; bad input a 400 naming the field', async () => {
    const { a } = await twoEndpointsFourEvents()
    const other = await api.token('someone_else', ['admin'])
    expect((await log(`?endpoint_id=${a.id}`, other)).status).toBe(404)
    expect((await log('', other)).body.data).toEqual([])
    for (const [query, field] of [['?state=waiting', 'state'], ['?since=yesterday', 'since'], ['?endpoint_id=1', 'endpoint_id'], ['?cursor=nope', 'cursor'], ['?since=2026-03-02T00:00:00Z&until=2026-03-01T00:00:00Z', 'until']] as const) {
      const res = await log(query)
      expect(res.status, query).toBe(400)
      expect(res.contentType).toContain('application/problem+json')
      expect(JSON.stringify(res.body), query).toContain(field)
    }
  })

  it('is one range scan of an index, newest first, with no sort (EXPLAIN)', async () => {
    const endpoint = (await h.createEndpoint()).endpoint
    // Enough rows, over several owners, for the planner to prefer the index.
    await bypassLedgerGuards(h.db, (trx) =>
      forgeDeliveries(trx, sql`
        select gen_random_uuid(), 'owner_' || (i % 2), ${endpoint.id}::uuid, 'evt_' || i, 'booking.created',
          case when i % 7 = 0 then 'discarded' else 'completed' end, 1, now(), 1, null::timestamptz, null, null::timestamptz, null::integer, null,
          now() - (i || ' seconds')::interval, now()
        from generate_series(1, 20000) i
      `),
    )
    // Statistics are the owner's to gather (the service role may not analyze).
    await sql`analyze delivery_origins`.execute(adminDbOf(h.db))
    await sql`analyze delivery_states`.execute(adminDbOf(h.db))
    await sql`analyze endpoints`.execute(adminDbOf(h.db))
    const plan = async (q: ReturnType<typeof deliveryLogQuery>) =>
      (await sql<{ 'QUERY PLAN': string }>`explain ${q}`.execute(h.db)).rows.map((r) => r['QUERY PLAN']).join('\n')
    const first = await plan(deliveryLogQuery('owner_1', { limit: 51 }))
    console.log(`EXPLAIN deliveries.list (owner, limit 50):\n${first}`)
    expect(first).toMatch(/Index Scan using delivery_origins_owner_log_idx on delivery_origins/)
    expect(first).not.toMatch(/(->|^)\s*Sort\s+\(cost|Seq Scan on delivery_/m)
    const paged = await plan(deliveryLogQuery('owner_1', { limit: 51, state: 'discarded', event_type: 'booking.created', before: [new Date().toISOString(), '00000000-0000-0000-0000-000000000000'] }))
    console.log(`EXPLAIN deliveries.list (owner, state, type, cursor, limit 50):\n${paged}`)
    expect(paged).toMatch(/Index Scan using delivery_origins_owner_log_idx on delivery_origins/)
    expect(paged).toMatch(/Index Cond: .*owner_id = .*ROW\(created_at, id\) < ROW\(/s)
    expect(paged).not.toMatch(/(->|^)\s*Sort\s+\(cost|Seq Scan on delivery_/m)
    // A type that matches (almost) nothing: its own index (owner, type, created_at, id), so a
    // rare type does not walk the owner's whole log.
    const rare = await plan(deliveryLogQuery('owner_1', { limit: 51, event_type: 'booking.rescheduled' }))
    console.log(`EXPLAIN deliveries.list (owner, a rare type, limit 50):\n${rare}`)
    expect(rare).toMatch(/delivery_origins_owner_type_log_idx/)
    expect(rare).not.toMatch(/(->|^)\s*Sort\s+\(cost|Seq Scan on delivery_/m)
  })
})
