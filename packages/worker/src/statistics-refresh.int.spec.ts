import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { statisticsRefresh } from '@hookledger/store'
import { engineHarness, eventually, type EngineHarness } from '@hookledger/testkit'

/**
 * After a burst the planner's statistics are brought up to date by the service itself (migration
 * 0012): the plans hookledger_write keeps per connection were made when the tables were small.
 */
describe('statistics after a burst', () => {
  let h: EngineHarness
  beforeAll(async () => {
    h = await engineHarness()
    for (let i = 0; i < 3; i++) await h.createEndpoint()
    for (let i = 0; i < 10; i++) await h.publish({ id: `evt_burst_${i}` })
    await h.step()
  })
  afterAll(() => h.close())

  const analyzedAt = async () =>
    Object.fromEntries(
      (await sql<{ relname: string; at: Date | null }>`
        select relname::text, coalesce(last_analyze, last_autoanalyze) as at from pg_stat_user_tables where relname in ('delivery_origins', 'delivery_states')
      `.execute(h.db)).rows.map((r) => [r.relname, r.at]),
    )

  it('the service role analyzes the tables a burst changed by more than a fifth, and then none until they change again', async () => {
    // The writers' counts reach the statistics views when their backends flush (about a second).
    const refreshed = await eventually('delivery_origins analyzed', async () => {
      const tables = await statisticsRefresh(h.db, 1)
      return tables.includes('delivery_origins') && tables
    }, { timeoutMs: 5_000 })
    expect(refreshed).toContain('delivery_origins')
    expect((await analyzedAt())['delivery_origins']).not.toBeNull()
    // Just analyzed: nothing changed since, so nothing to do.
    expect(await statisticsRefresh(h.db, 1)).not.toContain('delivery_origins')
  })

  it('a drain that only settles what was enqueued (updates, the size unchanged) analyzes nothing', async () => {
    // What the burst left is analyzed first; then the drain goes on (one delivery in flight per
    // endpoint: three a step), each a claim and a settle of a row that exists.
    await eventually('the burst analyzed', async () => (await statisticsRefresh(h.db, 1)).length === 0 || null, { timeoutMs: 5_000 })
    const before = await analyzedAt()
    for (let i = 0; i < 4; i++) await h.step()
    // More updates than a fifth of the 30 rows, none added: the statistics views see them once
    // the backends flush their counts.
    await eventually('the updates counted', async () =>
      Number((await sql<{ n: string }>`select n_mod_since_analyze::text as n from pg_stat_user_tables where relname = 'delivery_states'`.execute(h.db)).rows[0]!.n) >= 12 || null,
    { timeoutMs: 5_000 })
    expect(await statisticsRefresh(h.db, 1)).not.toContain('delivery_states')
    expect((await analyzedAt())['delivery_states']).toEqual(before['delivery_states'])
  })

  it('leaves tables alone below the threshold of changes', async () => {
    expect(await statisticsRefresh(h.db, 1_000_000)).toEqual([])
  })
})
