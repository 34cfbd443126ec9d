/**
 * `ledger replay --verify`: rebuilds `endpoints` and `deliveries` from the ledger alone and
 * compares them with the live tables, in one repeatable-read snapshot (safe on a running
 * system; nothing live is changed).
 *
 * Each table is one stream (ledger-replay-stream.ts): the entries about its rows, in (row id,
 * position) order through a server-side cursor, merged with the live rows in id order. Every
 * row's entries go through the same evolve function the writers use, in the ledger's order, and
 * its history is checked against the engine's rules on the way (ledger-replay-consistency.ts).
 * Memory stays bounded whatever the size of the ledger: one row of each side, the cursors'
 * batches, and the differences kept for the report (`maxDifferences`; all are counted).
 *
 * The attempt history (`delivery_attempts`) is a view over the `delivery.attempted` entries:
 * it cannot differ from them, so it is not compared; its entries are counted (`attempts`).
 * The claim's queue heads (`endpoint_queue`) are a derived index of the two projections: each
 * is checked against its definition over the live rows, which the streams have just checked
 * against the ledger.
 */
import { sql, type RawBuilder } from 'kysely'
import {
  evolveDelivery,
  evolveEndpoint,
  type DeliveryRow,
  type EndpointRow,
  type LedgerRecord,
} from '@hookledger/core'
import type { Db, Trx } from './database.js'
import { BufferGauge } from './server-cursor.js'
import { endpointQueueDrift } from './endpoint-queue.js'
import { DeliveryHistoryCheck, EndpointHistoryCheck, type ReportProblem } from './ledger-replay-consistency.js'
import {
  DifferenceSink,
  verifyTable,
  type EntityFold,
  type ReplayCounters,
  type ReplayDifference,
  type ReplayDifferenceKind,
  type ReplayTable,
} from './ledger-replay-stream.js'

export type { ReplayDifference, ReplayDifferenceKind, ReplayTable } from './ledger-replay-stream.js'
export { RowJsonCodec, RowJsonError, timestamptzJson } from './ledger-replay-row-json.js'

export interface ReplayReport {
  /** Ledger rows in the snapshot (all kinds). */
  readonly ledgerRows: number
  /** Rows the ledger rebuilds. */
  readonly endpoints: number
  readonly deliveries: number
  /** `delivery.attempted` entries (the attempt history's rows). */
  readonly attempts: number
  /** The differences kept, up to `maxDifferences`: endpoints first, then deliveries, by id. */
  readonly differences: ReplayDifference[]
  /** Every difference found, kept or not. */
  readonly differencesTotal: number
  /** `differencesTotal - differences.length`. */
  readonly differencesOmitted: number
  /** Every difference found, by table and kind. */
  readonly differenceCounts: Record<ReplayTable, Record<ReplayDifferenceKind, number>>
  /** Rows of the live tables. */
  readonly live: { readonly endpoints: number; readonly deliveries: number }
  /** Ledger entries each table's stream folded (a lease entry is folded for both). */
  readonly entriesFolded: { readonly endpoints: number; readonly deliveries: number }
  /** The most rows (rebuilt or live) held in memory at once. */
  readonly peakHeld: number
  /** The most fetched ledger and live rows held in memory at once (batches in hand and in flight). */
  readonly peakBufferedRows: number
  /** Rebuilt rows whose values the database had to render for the comparison (odd values only). */
  readonly renderedByDatabase: number
  /** Where the time went: each table's stream (fold and compare), and the count of all rows. */
  readonly phaseMs: { readonly endpoints: number; readonly deliveries: number; readonly queue: number; readonly count: number }
  readonly ms: number
}

/** Where a running replay is, reported to `onProgress`. */
export interface ReplayProgress {
  readonly phase: ReplayTable
  /** Ledger entries folded so far (both streams). */
  readonly rows: number
  /** Rows compared so far. */
  readonly entities: number
  readonly ms: number
  /** The planner's estimate of the entries both streams fold (statistics, not a count); null if unknown. */
  readonly estimatedRows: number | null
}

export interface ReplayOptions {
  /** How many differences the report keeps (all are counted). Default 1,000. */
  readonly maxDifferences?: number
  /** Called about every 500 ms while the replay runs. */
  readonly onProgress?: (progress: ReplayProgress) => void
  /** Rows per cursor fetch. Default 5,000. */
  readonly fetchRows?: number
}

const DEFAULT_MAX_DIFFERENCES = 1_000
const DEFAULT_FETCH_ROWS = 5_000
const PROGRESS_EVERY_MS = 500

const ENTRY_COLUMNS = sql`position, occurred_at, owner_id, kind, endpoint_id, delivery_id, event_id, payload, actor`

/**
 * The delivery entries that move an endpoint: `evolveEndpoint` reads a claim (it takes the
 * lease) and an attempt, a discard or a busy snooze (they release it); every other entry that
 * names an endpoint leaves it as it is unless its kind is `endpoint.*`. A unit test holds
 * evolveEndpoint to this list.
 */
export const ENDPOINT_LEASE_KINDS = ['delivery.claimed', 'delivery.attempted', 'delivery.discarded', 'delivery.lease_busy'] as const

/** Every entry `applyEntry` folds into some endpoint and that can change it, by endpoint and position. */
const endpointEntries = sql`
  select ${ENTRY_COLUMNS} from ledger
  where endpoint_id is not null
    and (kind like 'endpoint.%' or kind in (${sql.join(ENDPOINT_LEASE_KINDS.map((k) => sql.lit(k)))}))
  order by endpoint_id, position
`
/** Every entry `applyEntry` folds into the delivery it names, by delivery and position (`ledger_delivery_id_idx`). */
const deliveryEntries = sql`
  select ${ENTRY_COLUMNS} from ledger where delivery_id is not null order by delivery_id, position
`
/**
 * Each retirement expanded into one entry per delivery it names (`ledger_retired_idx`;
 * `deliveryIdsOf` in core), by delivery and position: merged with `deliveryEntries` on the way
 * (a union sorted by PostgreSQL would sort the whole ledger first). The copies carry the
 * payload without the id list, which the fold does not need and would otherwise travel once
 * per delivery it names.
 */
const retiredDeliveryEntries = sql`
  select l.position, l.occurred_at, l.owner_id, l.kind, l.endpoint_id, r.id::uuid as delivery_id, l.event_id,
         l.payload - 'delivery_ids' as payload, l.actor
  from ledger l cross join lateral jsonb_array_elements_text(l.payload -> 'delivery_ids') as r(id)
  where l.kind = 'deliveries.retired'
  order by delivery_id, l.position
`

/** Reports a broken rule of the current row's history as an `inconsistent` difference. */
function problemReporter(sink: DifferenceSink, table: ReplayTable, current: { key: string }): ReportProblem {
  return (position, problem) => {
    if (!sink.keeping) return sink.count(table, 'inconsistent')
    sink.add({
      table,
      key: current.key,
      kind: 'inconsistent',
      columns: [],
      live: null,
      replayed: null,
      ...(position !== null ? { position } : {}),
      problem,
    })
  }
}

/** `applyEntry`, for one row: an entry that returns no row removes it (a purge, a retirement). */
class EndpointFold implements EntityFold<EndpointRow> {
  readonly current = { key: '' }
  readonly #check: EndpointHistoryCheck
  #row: EndpointRow | null = null

  constructor(sink: DifferenceSink) {
    this.#check = new EndpointHistoryCheck(problemReporter(sink, 'endpoints', this.current))
  }
  start(key: string): void {
    this.current.key = key
    this.#row = null
    this.#check.start()
  }
  apply(e: LedgerRecord): void {
    this.#row = evolveEndpoint(this.#row, e) // null after endpoint.purged: the row is gone
    this.#check.apply(e)
  }
  finish(): EndpointRow | null {
    this.#check.finish()
    return this.#row
  }
}

class DeliveryFold implements EntityFold<DeliveryRow> {
  readonly current = { key: '' }
  readonly #check: DeliveryHistoryCheck
  #row: DeliveryRow | null = null
  attempts = 0

  constructor(sink: DifferenceSink) {
    this.#check = new DeliveryHistoryCheck(problemReporter(sink, 'deliveries', this.current))
  }
  start(key: string): void {
    this.current.key = key
    this.#row = null
    this.#check.start()
  }
  apply(e: LedgerRecord): void {
    this.#row = evolveDelivery(this.#row, e) // null after deliveries.retired: the row is gone
    this.#check.apply(e)
    if (e.kind === 'delivery.attempted') this.attempts++
  }
  finish(): DeliveryRow | null {
    this.#check.finish()
    return this.#row
  }
}

/** The planner's row estimate of a query (from the statistics: costs nothing to ask). */
async function plannedRows(trx: Trx, query: RawBuilder<unknown>): Promise<number | null> {
  const r = await sql<{ 'QUERY PLAN': [{ Plan: { 'Plan Rows': number } }] }>`explain (format json) ${query}`.execute(trx)
  const n = r.rows[0]?.['QUERY PLAN']?.[0]?.Plan?.['Plan Rows']
  return typeof n === 'number' && Number.isFinite(n) ? n : null
}

/**
 * Rebuilds endpoints and deliveries from the ledger and diffs them with the live tables (see
 * the file's comment). A healthy system has `differencesTotal === 0`.
 */
export async function ledgerReplayVerify(db: Db, options: ReplayOptions = {}): Promise<ReplayReport> {
  const started = performance.now()
  const maxDifferences = Math.max(0, options.maxDifferences ?? DEFAULT_MAX_DIFFERENCES)
  const fetchRows = Math.max(1, Math.floor(options.fetchRows ?? DEFAULT_FETCH_ROWS))
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      // The forms `to_jsonb` renders, fixed whatever the server's settings (RowJsonCodec).
      await sql`set local timezone to 'UTC'`.execute(trx)
      await sql`set local bytea_output to 'hex'`.execute(trx)
      const sink = new DifferenceSink(maxDifferences)
      const gauge = new BufferGauge()
      const counters: ReplayCounters = { phase: 'endpoints', rows: 0, entities: 0, held: 0, peakHeld: 0 }
      let estimatedRows: number | null = null
      const onProgress = options.onProgress
      const timer = onProgress
        ? setInterval(() => {
            try {
              onProgress({
                phase: counters.phase,
                rows: counters.rows,
                entities: counters.entities,
                ms: Math.round(performance.now() - started),
                estimatedRows,
              })
            } catch {
              // A failing progress reporter does not stop the replay.
            }
          }, PROGRESS_EVERY_MS)
        : null
      timer?.unref()
      try {
        if (onProgress) {
          const [a, b] = [await plannedRows(trx, endpointEntries), await plannedRows(trx, deliveryEntries)]
          estimatedRows = a !== null && b !== null ? Math.round(a + b) : null
        }
        const common = { sink, counters, gauge, fetchRows }
        let mark = performance.now()
        const lap = () => {
          const now = performance.now()
          const ms = Math.round(now - mark)
          mark = now
          return ms
        }
        const endpointFold = new EndpointFold(sink)
        const endpoints = await verifyTable(trx, {
          ...common,
          table: 'endpoints',
          ledgerQueries: [endpointEntries],
          keyColumn: 'endpoint_id',
          fold: endpointFold,
        })
        const endpointsMs = lap()
        const deliveryFold = new DeliveryFold(sink)
        const deliveries = await verifyTable(trx, {
          ...common,
          table: 'deliveries',
          ledgerQueries: [deliveryEntries, retiredDeliveryEntries],
          keyColumn: 'delivery_id',
          fold: deliveryFold,
        })
        const deliveriesMs = lap()
        const drift = await endpointQueueDrift(trx, Math.max(0, maxDifferences - sink.kept.length))
        for (const q of drift.rows) {
          sink.add({
            table: 'endpoint_queue',
            key: q.endpoint_id,
            kind: q.live_row ? 'changed' : 'missing_live',
            columns: ['ready_at'],
            live: q.live_row ? { ready_at: q.live?.toISOString() ?? null } : null,
            replayed: { ready_at: q.expected?.toISOString() ?? null },
          })
        }
        for (let i = drift.rows.length; i < drift.total; i++) sink.count('endpoint_queue', 'changed')
        const queueMs = lap()
        const ledgerRows = Number(
          (await sql<{ n: string }>`select count(*) as n from ledger`.execute(trx)).rows[0]!.n,
        )
        return {
          ledgerRows,
          endpoints: endpoints.rebuilt,
          deliveries: deliveries.rebuilt,
          attempts: deliveryFold.attempts,
          differences: sink.kept,
          differencesTotal: sink.total,
          differencesOmitted: sink.total - sink.kept.length,
          differenceCounts: sink.counts,
          live: { endpoints: endpoints.live, deliveries: deliveries.live },
          entriesFolded: { endpoints: endpoints.entries, deliveries: deliveries.entries },
          peakHeld: counters.peakHeld,
          peakBufferedRows: gauge.peak,
          renderedByDatabase: endpoints.renderedByDatabase + deliveries.renderedByDatabase,
          phaseMs: { endpoints: endpointsMs, deliveries: deliveriesMs, queue: queueMs, count: lap() },
          ms: Math.round(performance.now() - started),
        }
      } finally {
        if (timer) clearInterval(timer)
      }
    })
}
