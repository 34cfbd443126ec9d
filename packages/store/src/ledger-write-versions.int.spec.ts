/**
 * A write that changes several rows checks each against the version its caller read, matched by
 * the patch's position (migration 0020), both when it reads the rows and again when it updates
 * them under their locks.
 */
import { sql } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import type { DeliveryRow, LedgerEntry } from '@hookledger/core'
import { eventually, engineHarness, type EngineHarness } from '@hookledger/testkit'
import { ledgerWrite } from './ledger-write.js'

let h: EngineHarness
afterEach(async () => h?.close())

const EVENTS = ['evt_a', 'evt_b', 'evt_c', 'evt_d']

/** A snooze of a waiting delivery: it changes the row's due time and version, nothing else. */
const snooze = (d: DeliveryRow, at: Date, minutes: number): LedgerEntry => ({
  kind: 'delivery.lease_busy',
  occurred_at: at,
  owner_id: d.owner_id,
  endpoint_id: d.endpoint_id,
  delivery_id: d.id,
  event_id: d.event_id,
  actor: 'worker:test',
  payload: { next_attempt_at: new Date(at.getTime() + minutes * 60_000).toISOString() },
})

async function waitingDeliveries(): Promise<DeliveryRow[]> {
  h = await engineHarness()
  await h.createEndpoint()
  for (const id of EVENTS) await h.publish({ id })
  await h.dispatcher.fanoutOnce()
  // Not in id order: the positions of patches and versions are the caller's, not the table's.
  return Promise.all([...EVENTS].reverse().map((id) => h.deliveryOf(id)))
}

describe('a write changing several deliveries', () => {
  it('updates each to its own patch when every version is as read', async () => {
    const rows = await waitingDeliveries()
    h.clock.advance(1_000)
    const at = h.clock.now()
    await h.db.transaction().execute((trx) => ledgerWrite(trx, { base: { deliveries: rows }, entries: rows.map((d, i) => snooze(d, at, i + 1)) }))
    for (const [i, d] of rows.entries()) {
      expect(await h.deliveryOf(d.event_id)).toMatchObject({ next_attempt_at: new Date(at.getTime() + (i + 1) * 60_000), updated_at: at })
    }
    expect((await h.replay()).differences).toEqual([])
  })

  it('is refused whole when one row moved after it read it, while it waited for that row', async () => {
    const rows = await waitingDeliveries()
    h.clock.advance(1_000)
    const at = h.clock.now()
    const middle = rows[2]!
    // Another writer changes one of the rows and holds it, uncommitted, until told to commit.
    let commit!: () => void
    const committed = new Promise<void>((resolve) => (commit = resolve))
    let changed!: () => void
    const changedYet = new Promise<void>((resolve) => (changed = resolve))
    const other = h.db.transaction().execute(async (trx) => {
      await ledgerWrite(trx, { base: { deliveries: [middle] }, entries: [snooze(middle, at, 30)] })
      changed()
      await committed
    })
    await changedYet
    // The write under test read every row as it was before, and waits for the held one's lock.
    const outcome = h.db
      .transaction()
      .execute((trx) => ledgerWrite(trx, { base: { deliveries: rows }, entries: rows.map((d, i) => snooze(d, at, i + 1)) }))
      .then(() => 'written', (err: Error) => err.message)
    await eventually('the write to wait for the held row', async () => {
      const { rows: waiting } = await sql<{ n: string }>`select count(*) as n from pg_stat_activity where wait_event_type = 'Lock' and query like '%hookledger_write%'`.execute(h.db)
      return Number(waiting[0]!.n) > 0
    })
    commit()
    await other
    expect(await outcome).toMatch(/row_version/)
    // Nothing of the refused write: the other writer's change, and the rest as they were.
    expect(await h.deliveryOf(middle.event_id)).toMatchObject({ next_attempt_at: new Date(at.getTime() + 30 * 60_000) })
    for (const d of rows.filter((r) => r.id !== middle.id)) expect(await h.deliveryOf(d.event_id)).toMatchObject({ updated_at: d.updated_at })
    expect((await h.replay()).differences).toEqual([])
  })
})
