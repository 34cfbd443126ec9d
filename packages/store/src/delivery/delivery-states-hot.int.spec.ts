/**
 * The state row's claim is a HOT update (migration 0021): no index of `delivery_states` reads a
 * column a claim changes, so the claim writes a heap-only version and no index entry. Counted
 * by PostgreSQL itself, in the claim's own transaction (`pg_stat_xact_user_tables`), so an index
 * added later on `state`, the lease or `updated_at` fails here rather than in the bench.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sql } from 'kysely'
import { completedSettlement, engineHarness, type EngineHarness } from '@hookledger/testkit'
import type { Trx } from '../database/database.js'
import { claimInTransaction } from './delivery-claim.js'
import { deliverySettle } from './delivery-settle.js'

let h: EngineHarness

beforeAll(async () => {
  h = await engineHarness({ reply: { status: 204 } })
  await h.createEndpoint()
})
afterAll(async () => {
  await h?.close()
})

/** This transaction's updates of delivery_states so far, and how many were HOT. */
async function stateUpdates(trx: Trx): Promise<{ upd: number; hot: number }> {
  const { rows } = await sql<{ upd: number; hot: number }>`
    select n_tup_upd::int as upd, n_tup_hot_upd::int as hot from pg_stat_xact_user_tables
    where relname = 'delivery_states' and schemaname = current_schema()
  `.execute(trx)
  return rows[0] ?? { upd: 0, hot: 0 }
}

describe('delivery_states', () => {
  it('has two indexes: its key and the live index', async () => {
    const { rows } = await sql<{ name: string }>`
      select indexrelid::regclass::text as name from pg_index
      where indrelid = 'delivery_states'::regclass order by 1
    `.execute(h.db)
    expect(rows.map((r) => r.name.replace(/^.*\./, ''))).toEqual(['delivery_states_live_idx', 'delivery_states_pkey'])
  })

  it('a claim rewrites the state row in place (HOT); the settle that ends the delivery cannot', async () => {
    await h.publish({ id: 'evt_hot' })
    await h.dispatcher.fanoutOnce()
    const held = await h.db.transaction().execute(async (trx) => {
      const before = await stateUpdates(trx)
      const { claimed } = await claimInTransaction(trx, { now: h.clock.now(), limit: 1, actor: 'worker:hot' })
      expect(claimed).toHaveLength(1)
      const after = await stateUpdates(trx)
      expect({ upd: after.upd - before.upd, hot: after.hot - before.hot }).toEqual({ upd: 1, hot: 1 })
      return claimed[0]!
    })
    // The settle clears next_attempt_at, so the row leaves the live index: a new key entry.
    await h.db.transaction().execute(async (trx) => {
      const before = await stateUpdates(trx)
      const recorded = await deliverySettle(trx, [completedSettlement(held, h.clock.now(), 'worker:hot')], h.clock.now())
      expect([...recorded]).toEqual([held.delivery.id])
      const after = await stateUpdates(trx)
      expect({ upd: after.upd - before.upd, hot: after.hot - before.hot }).toEqual({ upd: 1, hot: 0 })
    })
    expect(await h.deliveryOf('evt_hot')).toMatchObject({ state: 'completed', next_attempt_at: null })
  })
})
