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
 * It starts from the latest signed projection snapshot (ledger-snapshot.ts): its rows are a third
 * stream, each row's fold starts from its snapshot state, only entries at or after the
 * snapshot's position are read, and the snapshot rows are hashed on the way and checked
 * against the digest their checkpoint signed (`snapshot.digestMatches`). `from: 'genesis'`
 * folds every entry instead, while no history is archived.
 *
 * The attempt history (`delivery_attempts`) is a view over the `delivery.attempted` entries:
 * it cannot differ from them, so it is not compared; its entries are counted (`attempts`).
 * The claim's queue heads (`endpoint_queue`) are a derived index of the two projections: each
 * is checked against its definition over the live rows, which the streams have just checked
 * against the ledger.
 */
import { SIDE_TABLES, sideTablesDrift } from './ledger-replay-side-tables.js'
import { sql } from 'kysely'
import { SnapshotDigest } from '../proof/ledger-snapshot-digest.js'
import type { Db } from '@hookledger/store'
import { BufferGauge } from './server-cursor.js'
import { endpointQueueDrift } from '@hookledger/store'
import {
  DeliveryFold,
  EndpointFold,
  deliveryEntries,
  endpointEntries,
  plannedRows,
  problemReporter,
  retiredDeliveryEntries,
  fanoutDeliveryEntries,
  type PositionRange,
} from './ledger-fold-sources.js'
import { DifferenceSink, verifyTable, type ReplayCounters, type ReplayDifference, type ReplayDifferenceKind, type ReplayTable } from './ledger-replay-stream.js'
import { archivedThrough, latestSignedSnapshot, snapshotStartRows } from './ledger-snapshot-read.js'

export type { ReplayDifference, ReplayDifferenceKind, ReplayTable } from './ledger-replay-stream.js'
export { RowJsonCodec, RowJsonError, timestamptzJson } from './ledger-replay-row-json.js'
export { ENDPOINT_LEASE_KINDS } from './ledger-fold-sources.js'

/** The snapshot a replay started from, and whether its rows still hash to the signed digest. */
export interface ReplaySnapshot {
  readonly seq: number
  /** The checkpoint that signed it. */
  readonly checkpoint: number
  readonly beforePosition: string
  readonly endpoints: number
  readonly deliveries: number
  readonly digestMatches: boolean
}

export interface ReplayReport {
  /** Ledger rows read (all kinds): every row, or those at or after the snapshot's position. */
  readonly ledgerRows: number
  /** The signed snapshot the fold started from; null when it started from the first entry. */
  readonly snapshot: ReplaySnapshot | null
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
  /**
   * `snapshot` (default): from the latest signed projection snapshot, folding only the entries
   * at or after its position (from the first entry when there is none); `genesis`: every
   * entry, which needs a ledger none of whose history was archived.
   */
  readonly from?: 'snapshot' | 'genesis'
}

/** A replay that cannot start where it was asked to. */
export class ReplayStartError extends Error {
  readonly code = 'replay_history_archived'
}

const DEFAULT_MAX_DIFFERENCES = 1_000
const DEFAULT_FETCH_ROWS = 5_000
const PROGRESS_EVERY_MS = 500

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
      const archived = await archivedThrough(trx)
      const snapshot = options.from === 'genesis' ? null : await latestSignedSnapshot(trx)
      if (archived !== null && (snapshot === null || BigInt(snapshot.descriptor.before_position) < BigInt(archived.beforePosition))) {
        throw new ReplayStartError(
          `the ledger below position ${archived.beforePosition} is archived (through checkpoint ${archived.throughCheckpoint}): ` +
            (snapshot === null ? 'replay starts from a signed snapshot, and none covers it' : `replay starts from snapshot ${snapshot.descriptor.seq}`),
        )
      }
      const range: PositionRange = snapshot ? { from: snapshot.descriptor.before_position } : {}
      const startDigest = snapshot ? new SnapshotDigest() : null
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
          const [a, b] = [await plannedRows(trx, endpointEntries(range)), await plannedRows(trx, deliveryEntries(range))]
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
        const endpointFold = new EndpointFold((current) => problemReporter(sink, 'endpoints', current))
        const endpoints = await verifyTable(trx, {
          ...common,
          table: 'endpoints',
          ledgerQueries: [endpointEntries(range)],
          keyColumn: 'endpoint_id',
          fold: endpointFold,
          ...(snapshot ? { start: snapshotStartRows(snapshot.descriptor.seq, 'endpoints'), onStartRow: (r) => startDigest!.push('endpoint', r.id, r.snapshot_row) } : {}),
        })
        const endpointsMs = lap()
        const deliveryFold = new DeliveryFold((current) => problemReporter(sink, 'deliveries', current))
        const deliveries = await verifyTable(trx, {
          ...common,
          table: 'deliveries',
          ledgerQueries: [deliveryEntries(range), retiredDeliveryEntries(range), fanoutDeliveryEntries(range)],
          keyColumn: 'delivery_id',
          fold: deliveryFold,
          ...(snapshot ? { start: snapshotStartRows(snapshot.descriptor.seq, 'deliveries'), onStartRow: (r) => startDigest!.push('delivery', r.id, r.snapshot_row) } : {}),
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
        // Events, tokens, access codes and embeds: what the ledger commits to beside the projections.
        const side = await sideTablesDrift(trx, Math.max(0, maxDifferences - sink.kept.length), { archived: (await archivedThrough(trx)) !== null })
        for (const d of side.rows) {
          sink.add({ table: d.table, key: d.key, kind: d.kind, columns: changedColumns(d.live, d.replayed), live: d.live, replayed: d.replayed, ...(d.position ? { position: d.position } : {}) })
        }
        for (const table of SIDE_TABLES) {
          for (let i = side.rows.filter((r) => r.table === table).length; i < side.counts[table]; i++) sink.count(table, 'changed')
        }
        const queueMs = lap()
        const ledgerRows = Number(
          (await sql<{ n: string }>`select count(*) as n from ledger where ${range.from !== undefined ? sql`position >= ${range.from}::bigint` : sql`true`}`.execute(trx)).rows[0]!.n,
        )
        return {
          ledgerRows,
          snapshot: snapshot
            ? {
                seq: snapshot.descriptor.seq,
                checkpoint: snapshot.checkpointSeq,
                beforePosition: snapshot.descriptor.before_position,
                endpoints: endpoints.started,
                deliveries: deliveries.started,
                digestMatches:
                  startDigest!.hex() === snapshot.descriptor.digest &&
                  endpoints.started === snapshot.descriptor.endpoints &&
                  deliveries.started === snapshot.descriptor.deliveries,
              }
            : null,
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

/** The fields two renderings of a row disagree on (all of them when one side is absent). */
function changedColumns(live: Record<string, unknown> | null, replayed: Record<string, unknown> | null): string[] {
  if (live === null || replayed === null) return []
  return Object.keys({ ...live, ...replayed }).filter((k) => JSON.stringify(live[k]) !== JSON.stringify(replayed[k])).sort()
}
