/**
 * `ledger replay` against forged data: what someone with database access could do with the
 * guards off (`bypassLedgerGuards`). Cuts from a history that rebuild the very same row are
 * caught by the history rules; every difference is counted, also past the report's cap.
 */
import { sql } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import { attemptPayloadOf } from '@hookledger/core'
import { ledgerReplayVerify } from '@hookledger/ledger'
import { bypassLedgerGuards, engineHarness, forgeDeliveries, type EngineHarness } from '@hookledger/testkit'

const s = 1_000
const min = 60 * s

let h: EngineHarness | null = null
afterEach(async () => {
  await h?.close()
  h = null
})

/** A delivery that failed twice (500, 500) and then completed: attempts 1, 2, 3. */
async function thirdTimeLucky(hx: EngineHarness) {
  hx.receiver.enqueue({ status: 500 }, { status: 500 })
  const { endpoint } = await hx.createEndpoint()
  await hx.publish({ id: 'evt_1' })
  await hx.step()
  hx.clock.advance(5 * s)
  await hx.step()
  hx.clock.advance(5 * min)
  await hx.step()
  const d = await hx.deliveryOf('evt_1')
  expect(d).toMatchObject({ state: 'completed', attempts: 3 })
  return { endpoint, d }
}

describe('ledger replay: the history rules', () => {
  it('a middle attempted + retry_scheduled pair cut out rebuilds the same row, and is named', async () => {
    h = await engineHarness()
    const { d } = await thirdTimeLucky(h)
    const ledger = await h.ledgerOf('delivery_id', d.id)
    expect(ledger.map((e) => e.kind)).toEqual([
      'delivery.enqueued',
      'delivery.claimed',
      'delivery.attempted',
      'delivery.retry_scheduled',
      'delivery.claimed',
      'delivery.attempted',
      'delivery.retry_scheduled',
      'delivery.claimed',
      'delivery.attempted',
    ])
    expect(ledger.at(-1)!.payload).toMatchObject({ outcome: 'completed', completes: true })
    expect((await h.replay()).differencesTotal).toBe(0)

    const cut = [ledger[5]!, ledger[6]!]
    expect(attemptPayloadOf(cut[0]!.payload as never)).toMatchObject({ attempt: 2, counted: true })
    await bypassLedgerGuards(h.db, (trx) =>
      sql`delete from ledger where position in (${sql.join(cut.map((e) => e.position))})`.execute(trx),
    )

    const report = await h.replay()
    // The fold alone cannot see it: attempts is the last counted attempt's number, 3.
    expect(report.differences.filter((x) => x.kind !== 'inconsistent')).toEqual([])
    expect(report.differences).toEqual([
      {
        table: 'deliveries',
        key: d.id,
        kind: 'inconsistent',
        columns: [],
        live: null,
        replayed: null,
        position: ledger[7]!.position,
        problem: 'delivery.claimed while the delivery is running: a claim takes a pending or retryable delivery',
      },
      {
        table: 'deliveries',
        key: d.id,
        kind: 'inconsistent',
        columns: [],
        live: null,
        replayed: null,
        position: ledger[8]!.position,
        problem: 'counted attempt 3 of run 1, the run has made 1: attempt 2 is missing',
      },
    ])
    expect(report).toMatchObject({ differencesTotal: 2, differencesOmitted: 0 })
    expect(report.differenceCounts.deliveries).toEqual({ changed: 0, missing_live: 0, extra_live: 0, inconsistent: 2 })
  })

  it('a history cut at its start is named, and the row it can no longer rebuild is extra', async () => {
    h = await engineHarness()
    const { d } = await thirdTimeLucky(h)
    const [enqueued] = await h.ledgerOf('delivery_id', d.id)
    await bypassLedgerGuards(h.db, (trx) => sql`delete from ledger where position = ${enqueued!.position}`.execute(trx))
    const report = await h.replay()
    expect(report.differences.map((x) => [x.key, x.kind, x.problem])).toEqual([
      [d.id, 'inconsistent', 'the history starts with delivery.claimed, not delivery.enqueued'],
      [d.id, 'extra_live', undefined],
    ])
  })

  it('compares timestamps to the microsecond, bytea and arrays as the database stores them', async () => {
    h = await engineHarness()
    const { endpoint, d } = await thirdTimeLucky(h)
    await bypassLedgerGuards(h.db, async (trx) => {
      await sql`update endpoints set updated_at = updated_at + interval '1 microsecond' where id = ${endpoint.id}`.execute(trx)
      await sql`update delivery_origins set event_type = event_type where id = ${d.id}`.execute(trx) // no change at all
    })
    let report = await h.replay()
    expect(report.differences.map((x) => [x.table, x.kind, x.columns])).toEqual([['endpoints', 'changed', ['updated_at']]])
    const [diff] = report.differences
    expect(String(diff!.live!['updated_at'])).toMatch(/\.\d{3}001\+00:00$/)

    await bypassLedgerGuards(h.db, async (trx) => {
      await sql`update endpoints set updated_at = updated_at - interval '1 microsecond',
        secret_sealed = secret_sealed || '\\x00'::bytea, event_types = event_types || '{extra}'::text[] where id = ${endpoint.id}`.execute(trx)
    })
    report = await h.replay()
    expect(report.differences.map((x) => [x.table, x.kind, x.columns])).toEqual([['endpoints', 'changed', ['event_types', 'secret_sealed']]])
    expect(report.differences[0]!.live!['event_types']).toEqual(['*', 'extra'])
    expect(report.differences[0]!.replayed!['event_types']).toEqual(['*'])
    expect(String(report.differences[0]!.live!['secret_sealed'])).toBe(`${report.differences[0]!.replayed!['secret_sealed']}00`)
  })
})

describe('ledger replay: every difference counted', () => {
  it('past 1,000 differing rows: the first 1,000 kept in order, the exact total and how many were left out', async () => {
    h = await engineHarness()
    const { endpoint, d } = await thirdTimeLucky(h)
    const forged = 1_234
    await bypassLedgerGuards(h.db, async (trx) => {
      // rows no ledger entry ever made (after the real one in id order) …
      await forgeDeliveries(trx, sql`
        select ('ffffffff-ffff-4fff-8fff-' || lpad(to_hex(i), 12, '0'))::uuid, owner_id, endpoint_id, 'evt_forged_' || i, event_type, state, run,
          run_started_at, attempts, next_attempt_at, claimed_by, lease_until, last_status, last_error, created_at, updated_at
        from deliveries, generate_series(1, ${forged}) i where id = ${d.id}
      `)
      // … one changed behind the ledger's back, and one endpoint
      await sql`update delivery_states set attempts = 7 where id = ${d.id}`.execute(trx)
      await sql`update endpoints set description = 'edited' where id = ${endpoint.id}`.execute(trx)
    })
    const total = forged + 2

    const report = await ledgerReplayVerify(h.db)
    expect(report.differencesTotal).toBe(total)
    expect(report.differences).toHaveLength(1_000)
    expect(report.differencesOmitted).toBe(total - 1_000)
    expect(report.differenceCounts).toEqual({
      endpoints: { changed: 1, missing_live: 0, extra_live: 0, inconsistent: 0 },
      deliveries: { changed: 1, missing_live: 0, extra_live: forged, inconsistent: 0 },
      endpoint_queue: { changed: 0, missing_live: 0, extra_live: 0, inconsistent: 0 },
      events: { changed: 0, missing_live: 0, extra_live: 0, inconsistent: 0 },
      api_tokens: { changed: 0, missing_live: 0, extra_live: 0, inconsistent: 0 },
      access_codes: { changed: 0, missing_live: 0, extra_live: 0, inconsistent: 0 },
      embeds: { changed: 0, missing_live: 0, extra_live: 0, inconsistent: 0 },
      event_types: { changed: 0, missing_live: 0, extra_live: 0, inconsistent: 0 },
      owners: { changed: 0, missing_live: 0, extra_live: 0, inconsistent: 0 },
    })
    expect(report.live).toEqual({ endpoints: 1, deliveries: forged + 1 })
    expect(report.deliveries).toBe(1)
    // endpoints first, then deliveries, each by id
    expect(report.differences[0]).toMatchObject({ table: 'endpoints', key: endpoint.id, kind: 'changed', columns: ['description'] })
    const keys = report.differences.slice(1).map((x) => x.key)
    expect(keys).toEqual([...keys].sort())
    expect(report.differences[1]).toMatchObject({ table: 'deliveries', key: d.id, kind: 'changed', columns: ['attempts'] })
    expect(report.differences.at(-1)).toMatchObject({ key: 'ffffffff-ffff-4fff-8fff-0000000003e6', kind: 'extra_live' }) // the 998th

    const few = await ledgerReplayVerify(h.db, { maxDifferences: 3 })
    expect(few).toMatchObject({ differencesTotal: total, differencesOmitted: total - 3 })
    expect(few.differences).toEqual(report.differences.slice(0, 3))
    const none = await ledgerReplayVerify(h.db, { maxDifferences: 0 })
    expect(none).toMatchObject({ differences: [], differencesTotal: total, differencesOmitted: total })
  })
})
