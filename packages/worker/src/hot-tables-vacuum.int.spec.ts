import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { HOT_TABLES, hotTablesVacuum } from '@hookledger/store'
import { engineHarness, eventually, type EngineHarness } from '@hookledger/testkit'

/**
 * The few rows every claim and settle rewrites are vacuumed by the service's maintenance between
 * autovacuum's visits (hot-tables-vacuum.ts): as the service role, which PostgreSQL 17+ grants
 * MAINTAIN on those tables only.
 */
describe('the hot tables, vacuumed by the service', () => {
  let h: EngineHarness
  beforeAll(async () => {
    h = await engineHarness()
    for (let i = 0; i < 3; i++) await h.createEndpoint()
    for (let i = 0; i < 10; i++) await h.publish({ id: `evt_hot_${i}` })
    for (let i = 0; i < 5; i++) await h.step()
  })
  afterAll(() => h.close())

  const may = async (table: string) =>
    (await sql<{ may: boolean }>`select has_table_privilege(${table}::regclass, 'MAINTAIN') as may`.execute(h.db)).rows[0]!.may

  it('the service role may vacuum the hot tables and no other', async () => {
    for (const t of HOT_TABLES) expect(await may(t), t).toBe(true)
    for (const t of ['delivery_states', 'delivery_origins', 'events', 'ledger_p_default']) expect(await may(t), t).toBe(false)
  })

  it('vacuums a hot table holding more dead versions than live rows, and then leaves it be', async () => {
    // The writers' counts reach the statistics views when their backends flush (about a second).
    const vacuumed = await eventually('endpoint_queue vacuumed', async () => {
      const r = await hotTablesVacuum(h.db, 1)
      expect(r.unpermitted).toBe(false)
      return r.vacuumed.includes('endpoint_queue') && r.vacuumed
    }, { timeoutMs: 5_000 })
    expect(vacuumed).toContain('endpoint_queue')
    const dead = await sql<{ n: string }>`select n_dead_tup::text as n from pg_stat_user_tables where relname = 'endpoint_queue' and schemaname = current_schema()`.execute(h.db)
    expect(Number(dead.rows[0]!.n)).toBe(0)
    expect((await hotTablesVacuum(h.db, 1)).vacuumed).not.toContain('endpoint_queue')
  })
})
