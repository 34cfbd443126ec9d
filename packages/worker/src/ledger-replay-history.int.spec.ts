/**
 * `ledger replay` on a long, healthy history made by the real engine on the fake clock: several
 * thousand deliveries over forty endpoints, with retries, Retry-After snoozes, a dead worker's
 * deliveries rescued (and its late answers kept as dropped settles), 404s discarded and
 * redelivered, events pruned under waiting deliveries, an endpoint disabled and enabled again,
 * one deleted, one renamed, one rotating its secret. Replay must find nothing (no false
 * positive of the row comparison or of the history rules), and the rendering of rows in
 * JavaScript must be what the database renders.
 */
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DeliveryOutcome, JOB_TIMEOUT_MS, generateWebhookSecret, secretKeyId, type EndpointRow } from '@hookledger/core'
import { RowJsonCodec, ledgerReplayVerify, type ReplayProgress } from '@hookledger/ledger'
import {
  deliveryClaim,
  deliveryRetire,
  deliverySettle,
  endpointPurge,
  endpointDelete,
  endpointRedeliver,
  endpointRotateSecret,
  endpointUpdate,
} from '@hookledger/store'
import { engineHarness, type EngineHarness, type ReceivedRequest, type ScriptedReply } from '@hookledger/testkit'

const ENDPOINTS = 40
const EVENTS = 25 // × 40 endpoints = 1,000 deliveries

let h: EngineHarness
const requestsSeen = new Map<string, number>()
let fixed = false

/** Deterministic per (endpoint, event): most succeed, some fail first, snooze, or 404 until fixed. */
function reply(req: ReceivedRequest): ScriptedReply {
  const event = (JSON.parse(req.body) as { id: string }).id
  const key = `${req.path} ${event}`
  const n = requestsSeen.get(key) ?? 0
  requestsSeen.set(key, n + 1)
  let hash = 0
  for (const c of key) hash = (hash * 31 + c.charCodeAt(0)) >>> 0
  switch (hash % 16) {
    case 0:
    case 1:
      return n < 1 ? { status: 500 } : { status: 204 }
    case 2:
      return n < 2 ? { status: 503 } : { status: 200 }
    case 3:
      return n < 1 ? { status: 503, headers: { 'retry-after': '1' } } : { status: 204 }
    case 4:
      return n < 2 ? { status: 429, headers: { 'retry-after': '3' } } : { status: 204 }
    case 5:
      return fixed ? { status: 204 } : { status: 404 }
    default:
      return { status: 204 }
  }
}

const waiting = async () =>
  Number(
    (await sql<{ n: string }>`select count(*) as n from deliveries where state in ('pending', 'retryable', 'running')`.execute(h.db))
      .rows[0]!.n,
  )

/** Steps the engine until nothing is left to do, jumping the clock to the next due time (or lease end). */
async function drain() {
  for (let i = 0; i < 5_000; i++) {
    const r = await h.step()
    if (r.claimed + r.settledOnClaim + r.fannedOut > 0) continue
    if ((await waiting()) === 0) return
    const next = (
      await sql<{ at: Date | null }>`
        select least(
          (select min(greatest(d.next_attempt_at, coalesce(e.busy_until, d.next_attempt_at)))
           from deliveries d join endpoints e on e.id = d.endpoint_id where d.state in ('pending', 'retryable')),
          (select min(lease_until) from deliveries where state = 'running')) as at
      `.execute(h.db)
    ).rows[0]!.at
    h.clock.set(Math.max(h.clock.now().getTime() + 1, next?.getTime() ?? 0))
    await h.dispatcher.maintenanceOnce()
  }
  throw new Error('the engine did not settle')
}

beforeAll(async () => {
  // Retention is kept out of the history (the last test runs it over the whole of it).
  h = await engineHarness({ concurrency: 64, reply, deliveryRetentionDays: 3650 })
  const endpoints: EndpointRow[] = []
  for (let i = 0; i < ENDPOINTS; i++) endpoints.push((await h.createEndpoint({ url: h.receiver.url(`/ep/${i}`) })).endpoint)
  const ctx = () => ({ owner_id: h.owner, now: h.clock.now(), actor: 'owner:test' })
  const publish = async (from: number, to: number) => {
    for (let e = from; e < to; e++) {
      await h.publish({ id: `evt_${e}` })
      h.clock.advance(10)
    }
  }

  await publish(0, EVENTS / 2)
  await h.dispatcher.fanoutOnce()
  // A worker claims and dies: its deliveries are rescued after the job timeout.
  const dead = await deliveryClaim(h.db, { now: h.clock.now(), limit: 8, actor: 'worker:dead' })
  expect(dead.claimed.length).toBe(8)
  for (let i = 0; i < 5; i++) await h.step()
  // The owner switches one endpoint off for a while, rotates another's secret, deletes a third.
  await h.db.transaction().execute((trx) => endpointUpdate(trx, ctx(), endpoints[10]!.id, { enabled: false }))
  const secret = generateWebhookSecret()
  await h.db.transaction().execute((trx) =>
    endpointRotateSecret(trx, ctx(), endpoints[11]!.id, {
      secret_sealed: h.secretBox.seal(secret),
      secret_key_id: secretKeyId(secret),
      graceMs: 60_000,
    }),
  )
  await h.db.transaction().execute((trx) => endpointDelete(trx, ctx(), endpoints[12]!.id))
  await h.db.transaction().execute((trx) => endpointUpdate(trx, ctx(), endpoints[13]!.id, { description: 'renamed' }))
  await drain()
  // The dead worker comes back with answers for claims the rescuer took: kept, not applied.
  const late = await h.db.transaction().execute((trx) =>
    deliverySettle(
      trx,
      dead.claimed.slice(0, 3).map((c) => ({
        delivery: c.delivery,
        actor: 'worker:dead',
        outcome: DeliveryOutcome.completed({ started_at: c.delivery.lease_until!, duration_ms: 5, status_code: 200, error: null, signed_with: [] }),
      })),
      h.clock.now(),
    ),
  )
  expect(late.size).toBe(0)
  await h.db.transaction().execute((trx) => endpointUpdate(trx, ctx(), endpoints[10]!.id, { enabled: true }))

  await publish(EVENTS / 2, EVENTS)
  await drain()
  // The receiver is fixed: every endpoint's discarded deliveries get a second run.
  fixed = true
  for (const e of endpoints) await h.db.transaction().execute((trx) => endpointRedeliver(trx, ctx(), e.id))
  await drain()
  // Events pruned while their deliveries still wait: discarded at the next claim.
  await publish(EVENTS, EVENTS + 2)
  await h.dispatcher.fanoutOnce()
  h.clock.advance(31 * 24 * 3_600_000)
  expect((await h.dispatcher.maintenanceOnce()).pruned).toBeGreaterThan(0)
  await drain()
  h.clock.advance(JOB_TIMEOUT_MS)
}, 600_000)

afterAll(async () => {
  await h?.close()
})

describe('ledger replay on a long healthy history', () => {
  it('the history has every kind of path in it', async () => {
    const kinds = await sql<{ kind: string; outcome: string | null; n: string }>`
      select kind, payload->>'outcome' as outcome, count(*) as n from ledger group by 1, 2 order by 1, 2
    `.execute(h.db)
    const seen = new Set(kinds.rows.flatMap((r) => (r.outcome ? [r.kind, `${r.kind}:${r.outcome}`] : [r.kind])))
    for (const k of [
      'delivery.attempted:completed',
      'delivery.attempted:retry_scheduled',
      'delivery.attempted:snoozed',
      'delivery.attempted:discarded',
      'delivery.attempted:interrupted',
      'delivery.snoozed',
      'delivery.retry_scheduled',
      'delivery.redelivered',
      'delivery.discarded',
      'delivery.settle_dropped',
      'endpoint.disabled',
      'endpoint.enabled',
      'endpoint.deleted',
      'endpoint.purged',
      'endpoint.secret_rotated',
      'endpoint.updated',
      'endpoint.failing',
      'endpoint.recovered',
      'event.pruned',
    ])
      expect(seen, k).toContain(k)
    const reasons = await sql<{ reason: string }>`select distinct payload->>'reason' as reason from ledger where kind = 'delivery.discarded'`.execute(h.db)
    expect(reasons.rows.map((r) => r.reason).sort()).toEqual(['endpoint_deleted', 'endpoint_disabled', 'event_pruned', 'http_status'])
    const deliveries = await sql<{ n: string }>`select count(*) as n from deliveries`.execute(h.db)
    expect(Number(deliveries.rows[0]!.n)).toBeGreaterThanOrEqual(1_000)
  })

  it('finds no difference', async () => {
    const progress: ReplayProgress[] = []
    const report = await ledgerReplayVerify(h.db, { fetchRows: 300, onProgress: (p) => progress.push(p) })
    expect(report.differences).toEqual([])
    expect(report.differencesTotal).toBe(0)
    const ledgerRows = Number((await sql<{ n: string }>`select count(*) as n from ledger`.execute(h.db)).rows[0]!.n)
    const attempts = Number((await sql<{ n: string }>`select count(*) as n from delivery_attempts`.execute(h.db)).rows[0]!.n)
    expect(report).toMatchObject({
      ledgerRows,
      attempts,
      // The deleted endpoint was purged by a maintenance pass once its deliveries had settled.
      endpoints: ENDPOINTS - 1,
      live: { endpoints: ENDPOINTS - 1, deliveries: report.deliveries },
      renderedByDatabase: 0,
    })
    expect(report.peakHeld).toBeLessThanOrEqual(2)
    // Bounded by the batch size, never by the history: each stream holds its batch and the one it
    // asked for next — three ledger streams for the deliveries (the rows naming one, the
    // retirements, the fan-out decisions' enqueues) and the live rows.
    expect(report.peakBufferedRows).toBeLessThanOrEqual(2 * 4 * 300)
    for (let i = 1; i < progress.length; i++) expect(progress[i]!.rows).toBeGreaterThanOrEqual(progress[i - 1]!.rows)
  })

  it('renders every live row in JavaScript exactly as to_jsonb does', async () => {
    await h.db.transaction().execute(async (trx) => {
      await sql`set local timezone to 'UTC'`.execute(trx)
      for (const table of ['endpoints', 'deliveries'] as const) {
        const codec = await RowJsonCodec.load(trx, table)
        const rows = (await sql<Record<string, unknown>>`select * from ${sql.ref(table)}`.execute(trx)).rows
        for (const row of rows) {
          const here = codec.render(row)
          expect(here).not.toBeNull()
          expect(JSON.stringify(here)).toBe(JSON.stringify(await codec.renderByDatabase(trx, row)))
        }
      }
    })
  })

  it('renders odd values as the database does, or leaves them to it', async () => {
    const base = (await h.db.selectFrom('endpoints').selectAll().executeTakeFirstOrThrow()) as unknown as Record<string, unknown>
    const variants: Record<string, unknown>[] = [
      { description: 'quotes " \\ back\nslash\ttab \u0001 é 日本 🎉' },
      { event_types: [] },
      { event_types: ['a', 'b"c', 'ü'] },
      { prev_secret_sealed: new Uint8Array(0), secret_sealed: Buffer.from([0, 255, 16]) },
      { created_at: new Date('2030-01-01T00:00:00.000Z'), updated_at: new Date('2030-01-01T00:00:00.100Z') },
      { busy_until: new Date('2030-01-01T00:00:00.120Z'), deleted_at: new Date('0999-06-01T12:00:00.007Z') },
      { failing_since: new Date(Number.NaN) },
      { embed_id: undefined, extra_key_not_a_column: 'x' },
      // left to the database: a year past 9999, a number where text belongs, a non-canonical uuid
      { prev_secret_expires_at: new Date('+012345-01-01T00:00:00Z') },
      { description: 42 },
      { busy_delivery_id: 'AAAAAAAA-0000-4000-8000-000000000001' },
    ]
    await h.db.transaction().execute(async (trx) => {
      await sql`set local timezone to 'UTC'`.execute(trx)
      const codec = await RowJsonCodec.load(trx, 'endpoints')
      for (const v of variants) {
        const row = { ...base, ...v }
        const db = await codec.renderByDatabase(trx, row)
        const here = codec.render(row)
        if (here !== null) expect(JSON.stringify(here), JSON.stringify(v)).toBe(JSON.stringify(db))
        expect(JSON.stringify(await codec.renderRow(trx, row))).toBe(JSON.stringify(db))
      }
      // a lone surrogate: jsonb refuses it, so the rebuilt row cannot be stored
      const lone = await codec.renderRow(trx, { ...base, description: 'x\ud800y' })
      expect(lone).toMatchObject({ error: expect.any(String) })
    })
  })

  it('after retention retires every settled delivery, still finds no difference', async () => {
    h.clock.advance(2 * 24 * 3_600_000)
    const settled = Number((await sql<{ n: string }>`select count(*) as n from deliveries where state in ('completed', 'discarded')`.execute(h.db)).rows[0]!.n)
    const all = Number((await sql<{ n: string }>`select count(*) as n from deliveries`.execute(h.db)).rows[0]!.n)
    let retired = 0
    for (;;) {
      const r = await deliveryRetire(h.db, { now: h.clock.now(), retentionDays: 1, actor: 'system', batchSize: 300 })
      if (r.retired === 0) break
      retired += r.retired
    }
    expect(retired).toBe(settled)
    expect(await endpointPurge(h.db, { now: h.clock.now(), actor: 'system' })).toBe(0) // purged already
    const report = await ledgerReplayVerify(h.db, { fetchRows: 300 })
    expect(report.differences).toEqual([])
    expect(report).toMatchObject({ deliveries: all - settled, endpoints: ENDPOINTS - 1, live: { endpoints: ENDPOINTS - 1, deliveries: all - settled } })
  })
})
