/**
 * `ledger replay` holds one row of each side at a time, whatever the size of the ledger: a
 * synthetic history of 12,000 deliveries (written straight in SQL, as a long-running system
 * would have accumulated it) is folded with at most two rows and four cursor batches in memory.
 */
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ledgerReplayVerify } from '@hookledger/ledger'
import { type Db } from '@hookledger/store'
import { bypassLedgerGuards, syntheticLedgerHistory, testDatabase, type TestDatabase } from '@hookledger/testkit'

const DELIVERIES = 12_000
const ENDPOINTS = 250
const FETCH_ROWS = 1_000


let database: TestDatabase
beforeAll(async () => {
  database = await testDatabase()
  await syntheticLedgerHistory(database.db, { deliveries: DELIVERIES, endpoints: ENDPOINTS })
}, 300_000)
afterAll(async () => {
  await database?.close()
})

describe('ledger replay at scale', () => {
  it(`folds ${DELIVERIES.toLocaleString('en')} deliveries holding two rows and four batches at most`, async () => {
    const report = await ledgerReplayVerify(database.db, { fetchRows: FETCH_ROWS })
    expect(report.differences).toEqual([])
    const counts = (
      await sql<{ ledger: string; delivery_entries: string }>`
        select count(*) as ledger, count(delivery_id) as delivery_entries from ledger
      `.execute(database.db)
    ).rows[0]!
    expect(report).toMatchObject({
      ledgerRows: Number(counts.ledger),
      endpoints: ENDPOINTS,
      deliveries: DELIVERIES,
      attempts: DELIVERIES + DELIVERIES / 10,
      differencesTotal: 0,
      live: { endpoints: ENDPOINTS, deliveries: DELIVERIES },
    })
    expect(report.entriesFolded.deliveries).toBe(Number(counts.delivery_entries))
    // One rebuilt row and one live row at a time; per cursor a batch in hand and one in flight.
    expect(report.peakHeld).toBeLessThanOrEqual(2)
    expect(report.peakBufferedRows).toBeLessThanOrEqual(4 * FETCH_ROWS)
  }, 120_000)

  it('and still names a cut attempt among them', async () => {
    const [victim] = (
      await sql<{ delivery_id: string }>`select delivery_id from ledger where kind = 'delivery.retry_scheduled' order by delivery_id desc limit 1`.execute(database.db)
    ).rows
    await bypassLedgerGuards(database.db, (trx) =>
      sql`delete from ledger where delivery_id = ${victim!.delivery_id} and kind in ('delivery.attempted', 'delivery.retry_scheduled') and payload->>'attempt' is distinct from '2'`.execute(trx),
    )
    const report = await ledgerReplayVerify(database.db, { fetchRows: FETCH_ROWS })
    expect(report.differences.map((d) => [d.key, d.kind])).toEqual([
      [victim!.delivery_id, 'inconsistent'],
      [victim!.delivery_id, 'inconsistent'],
    ])
  }, 120_000)
})
