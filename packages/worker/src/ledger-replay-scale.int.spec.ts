/**
 * `ledger replay` holds one row of each side at a time, whatever the size of the ledger: a
 * synthetic history of 12,000 deliveries (written straight in SQL, as a long-running system
 * would have accumulated it) is folded with at most two rows and four cursor batches in memory.
 */
import { sql, type RawBuilder } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ledgerReplayVerify, type Db } from '@hookledger/store'
import { bypassLedgerGuards, testDatabase, type TestDatabase } from '@hookledger/testkit'

const DELIVERIES = 12_000
const ENDPOINTS = 250
const FETCH_ROWS = 1_000

/**
 * A consistent history: every delivery enqueued, claimed, attempted and completed, every tenth
 * after a 500 and a retry. Entries are appended phase by phase (all enqueues, then all first
 * claims, …), so one delivery's entries lie far apart in the ledger, as in a real one; the live
 * rows are what the fold gives.
 */
async function syntheticHistory(db: Db) {
  await bypassLedgerGuards(db, async (trx) => {
    const iso = (t: RawBuilder<unknown>) => sql`to_char((${t}) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
    await sql`
      create temp table syn_ep on commit drop as
      select j, md5('endpoint-' || j)::uuid as id, decode(md5('secret-' || j), 'hex') as sealed,
             '2030-01-01T00:00:00Z'::timestamptz + (j || ' ms')::interval as at
      from generate_series(0, ${ENDPOINTS - 1}) j
    `.execute(trx)
    await sql`
      create temp table syn_d on commit drop as
      select i, md5('delivery-' || i)::uuid as id, md5('endpoint-' || (i % ${ENDPOINTS}))::uuid as endpoint_id,
             'evt_' || i as event_id, '2030-01-01T01:00:00Z'::timestamptz + (i * 10 || ' ms')::interval as enq,
             (i % 10 = 0) as retried
      from generate_series(1, ${DELIVERIES}) i
    `.execute(trx)
    await sql`
      insert into ledger (occurred_at, owner_id, kind, endpoint_id, payload, actor)
      select at, 'syn', 'endpoint.created', id,
        jsonb_build_object('url', 'https://example.test/' || j, 'description', '', 'event_types', jsonb_build_array('*'),
          'embed_id', null, 'secret_sealed', encode(sealed, 'base64'), 'secret_key_id', 'key_' || j), 'owner:syn'
      from syn_ep order by j
    `.execute(trx)
    await sql`
      insert into endpoints
      select id, 'syn', 'https://example.test/' || j, '', '{*}', null, sealed, 'key_' || j, null, null, null,
        true, null, null, null, null, null, at, at
      from syn_ep
    `.execute(trx)
    const append = (kind: string, at: RawBuilder<unknown>, payload: RawBuilder<unknown>, where: RawBuilder<unknown>) => sql`
      insert into ledger (occurred_at, owner_id, kind, endpoint_id, delivery_id, event_id, payload, actor)
      select ${at}, 'syn', ${kind}, endpoint_id, id, event_id, ${payload}, 'worker:syn' from syn_d where ${where} order by i
    `
    const attempted = (at: RawBuilder<unknown>, no: number, status: number, outcome: string) =>
      sql`jsonb_build_object('attempt', ${no}::int, 'counted', true, 'run', 1, 'started_at', ${iso(at)}, 'duration_ms', 40,
        'status_code', ${status}::int, 'error', ${status === 500 ? 'HTTP 500' : null}::text, 'outcome', ${outcome}::text,
        'signed_with', jsonb_build_array('key'))`
    const claimed = (at: RawBuilder<unknown>) => sql`jsonb_build_object('worker', 'worker:syn', 'lease_until', ${iso(sql`${at} + interval '15 s'`)})`
    const t = (ms: number) => sql`enq + ${`${ms} ms`}::interval`
    await append('delivery.enqueued', sql`enq`, sql`jsonb_build_object('event_type', 'booking.created', 'next_attempt_at', ${iso(sql`enq`)}, 'cool_down', false)`, sql`true`).execute(trx)
    await append('delivery.claimed', t(1000), claimed(t(1000)), sql`true`).execute(trx)
    // an attempt and its outcome are appended together
    for (const [retried, status, outcome] of [[false, 200, 'completed'], [true, 500, 'retry_scheduled']] as const) {
      await sql`
        insert into ledger (occurred_at, owner_id, kind, endpoint_id, delivery_id, event_id, payload, actor)
        select ${t(1100)}, 'syn', k.kind, endpoint_id, id, event_id, k.payload, 'worker:syn'
        from syn_d cross join lateral (values
          (1, 'delivery.attempted', ${attempted(t(1100), 1, status, outcome)}),
          (2, ${outcome === 'completed' ? 'delivery.completed' : 'delivery.retry_scheduled'}::text,
            ${outcome === 'completed' ? sql`'{}'::jsonb` : sql`jsonb_build_object('next_attempt_at', ${iso(t(6100))}, 'backoff_ms', 5000)`})
        ) k(o, kind, payload)
        where retried = ${retried} order by i, k.o
      `.execute(trx)
    }
    await append('delivery.claimed', t(7000), claimed(t(7000)), sql`retried`).execute(trx)
    await sql`
      insert into ledger (occurred_at, owner_id, kind, endpoint_id, delivery_id, event_id, payload, actor)
      select ${t(7100)}, 'syn', k.kind, endpoint_id, id, event_id, k.payload, 'worker:syn'
      from syn_d cross join lateral (values (1, 'delivery.attempted', ${attempted(t(7100), 2, 200, 'completed')}), (2, 'delivery.completed', '{}'::jsonb)) k(o, kind, payload)
      where retried order by i, k.o
    `.execute(trx)
    await sql`
      insert into deliveries
      select id, 'syn', endpoint_id, event_id, 'booking.created', 'completed', 1, enq, case when retried then 2 else 1 end,
        null, null, null, 200, null, enq, case when retried then ${t(7100)} else ${t(1100)} end
      from syn_d
    `.execute(trx)
  })
  await sql`analyze ledger`.execute(db)
}

let database: TestDatabase
beforeAll(async () => {
  database = await testDatabase()
  await syntheticHistory(database.db)
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
