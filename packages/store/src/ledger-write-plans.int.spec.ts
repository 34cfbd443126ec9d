/**
 * How the write function's statements are planned (writePlanMode): a small write's generically
 * (planned once per connection), a large one's for its size, set in the write's own statement.
 */
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { LedgerEntry } from '@hookledger/core'
import { engineHarness, type EngineHarness } from '@hookledger/testkit'
import { GENERIC_PLAN_MAX_ITEMS, ledgerWrite, writePlanMode } from './ledger-write.js'

const suspended = (owner: string, at: Date): LedgerEntry => ({
  kind: 'owner.suspended', occurred_at: at, owner_id: owner, endpoint_id: null, delivery_id: null, event_id: null, actor: 'operator:test', payload: { reason: 'test' },
})

describe('writePlanMode', () => {
  it.each([
    [1, 'force_generic_plan'],
    [GENERIC_PLAN_MAX_ITEMS, 'force_generic_plan'],
    [GENERIC_PLAN_MAX_ITEMS + 1, 'auto'],
    [10_000, 'auto'],
  ])('%s rows and entries → %s', (items, mode) => {
    expect(writePlanMode(items)).toBe(mode)
  })
})

describe('a write sets its plan mode for its own transaction', () => {
  let h: EngineHarness
  beforeAll(async () => {
    h = await engineHarness()
  })
  afterAll(() => h.close())

  const modeAfter = (entries: LedgerEntry[]) =>
    h.db.transaction().execute(async (trx) => {
      await ledgerWrite(trx, { entries, owner: '*' })
      return (await sql<{ mode: string }>`select current_setting('plan_cache_mode') as mode`.execute(trx)).rows[0]!.mode
    })

  it('small: generic; large: PostgreSQL decides; and nothing outlives the transaction', async () => {
    expect(await modeAfter([suspended('o1', h.clock.now())])).toBe('force_generic_plan')
    const many = Array.from({ length: GENERIC_PLAN_MAX_ITEMS + 1 }, (_, i) => suspended(`o${i}`, h.clock.now()))
    expect(await modeAfter(many)).toBe('auto')
    // An autocommitted write: its setting ends with its statement, on the same connection.
    const after = await h.db.connection().execute(async (conn) => {
      await ledgerWrite(conn, { entries: [suspended('o1', h.clock.now())], owner: '*' })
      return (await sql<{ mode: string }>`select current_setting('plan_cache_mode') as mode`.execute(conn)).rows[0]!.mode
    })
    expect(after).toBe('auto')
  })
})
