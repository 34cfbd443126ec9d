/**
 * Projection snapshots (docs/ledger.md §7): the fold of every ledger entry below a position P
 * into endpoints and deliveries, stored beside the ledger and signed — its digest — by the
 * first checkpoint that seals every row below P. Replay and `ledger verify` start from the
 * latest one, so their cost follows what was appended since, and an archive may then drop the
 * partitions below it.
 *
 * P is cut under an instant's SHARE lock on the ledger: the lock waits for every transaction
 * that has inserted into the ledger to end, and no new position is drawn while it is held, so
 * every row below P is committed and no transaction's rows straddle P. The fold starts from the
 * previous snapshot (its rows checked against its signed digest first) and reads only the
 * entries in between, through the same streams and evolve functions as replay.
 */
import { parseLedgerPublicKey, type CheckpointSnapshot, type LedgerSigningKey } from '../proof/ledger-checkpoint.js'
import { SnapshotDigest, type SnapshotEntity } from '../proof/ledger-snapshot-digest.js'
import { type LedgerKeyHandOver } from '../proof/ledger-key-rotation.js'
import { sql } from 'kysely'
import type { Db, Trx } from '@hookledger/store'
import { ledgerChainVerify } from './ledger-chain-verify.js'
import { DeliveryFold, EndpointFold, deliveryEntries, endpointEntries, problemReporter, retiredDeliveryEntries, fanoutDeliveryEntries, type PositionRange } from './ledger-fold-sources.js'
import { RowJsonCodec, RowJsonError, type RowJson } from './ledger-replay-row-json.js'
import { DifferenceSink, foldTable, type ReplayCounters } from './ledger-replay-stream.js'
import { ledgerSealUntil } from './ledger-seal.js'
import { latestSignedSnapshot, snapshotStartRows, type SignedSnapshot } from './ledger-snapshot-read.js'
import { BufferGauge } from './server-cursor.js'

/** Where a snapshot cuts the ledger. */
export interface SnapshotCut {
  /** Every row below this position is committed; every later one is drawn after the cut. */
  readonly beforePosition: string
  /** The oldest transaction running at the cut (rows at or after the position have tx_ids at or above it). */
  readonly horizon: string
}

/** A snapshot taken, or the latest one when nothing was appended since. */
export interface SnapshotTaken {
  readonly snapshot: CheckpointSnapshot
  /** The checkpoint that signed it. */
  readonly checkpoint: number
  /** False when no entry was appended since the latest snapshot (it is returned instead). */
  readonly fresh: boolean
  /** Ledger entries folded on top of the previous snapshot. */
  readonly entriesFolded: number
  readonly ms: number
}

/** A snapshot refused: the chain does not verify, a history breaks a rule, or no checkpoint could sign it in time. */
export class SnapshotError extends Error {
  constructor(
    readonly code: 'ledger_tampered' | 'history_inconsistent' | 'snapshot_unsigned' | 'snapshot_altered' | 'snapshot_busy',
    message: string,
  ) {
    super(message)
  }
}

const LOCK_NOT_AVAILABLE = '55P03'
/** Rows per insert statement. */
const WRITE_BATCH = 2048

/** Cuts the ledger at the next position to be drawn, under an instant's SHARE lock (retried if a writer holds it long). */
export async function snapshotCut(db: Db, options: { lockTimeoutMs?: number; attempts?: number } = {}): Promise<SnapshotCut> {
  const attempts = options.attempts ?? 5
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction().execute(async (trx) => {
        // A SHARE request queues the writers behind it while it waits: keep the wait short.
        const row = (
          await sql<{ next: string; horizon: string }>`
            select before_position::text as next, horizon::text as horizon from hookledger_snapshot_cut(${options.lockTimeoutMs ?? 2000}::integer)
          `.execute(trx)
        ).rows[0]!
        return { beforePosition: row.next, horizon: row.horizon }
      })
    } catch (err) {
      if ((err as { code?: string }).code !== LOCK_NOT_AVAILABLE || attempt >= attempts) throw err
    }
  }
}

/**
 * Takes a snapshot: verifies the chain (from the latest snapshot on), cuts, folds the previous
 * snapshot and the entries since into new rows, then waits for a checkpoint to sign it (the
 * sealer signs it once every row below the cut is sealed) and prunes the rows of older
 * snapshots. Nothing appended since the latest snapshot: that one is returned.
 */
export async function ledgerSnapshotTake(
  db: Db,
  params: { key: LedgerSigningKey; now: () => Date; signWithinMs?: number; onProgress?: (p: { phase: string; rows: number; ms: number }) => void; /** The key hand-overs (rotate-key) the chain check follows. */ handOvers?: readonly LedgerKeyHandOver[] },
): Promise<SnapshotTaken> {
  // One taker at a time, across processes: a session lock on a connection of its own, held
  // while the work runs on others.
  return db.connection().execute(async (conn) => {
    const locked = (await sql<{ ok: boolean }>`select pg_try_advisory_lock(hashtext('hookledger.ledger_snapshot')) as ok`.execute(conn)).rows[0]!.ok
    if (!locked) throw new SnapshotError('snapshot_busy', 'another process is taking a snapshot; try again when it is done')
    try {
      return await takeSnapshot(db, params)
    } finally {
      await sql`select pg_advisory_unlock(hashtext('hookledger.ledger_snapshot'))`.execute(conn)
    }
  })
}

/** When the latest snapshot was taken (null: never). */
export async function ledgerSnapshotLatestAt(db: Db): Promise<Date | null> {
  return (await sql<{ at: Date | null }>`select max(created_at) as at from ledger_snapshots`.execute(db)).rows[0]!.at
}

async function takeSnapshot(
  db: Db,
  params: { key: LedgerSigningKey; now: () => Date; signWithinMs?: number; onProgress?: (p: { phase: string; rows: number; ms: number }) => void; /** The key hand-overs (rotate-key) the chain check follows. */ handOvers?: readonly LedgerKeyHandOver[] },
): Promise<SnapshotTaken> {
  const started = performance.now()
  const chain = await ledgerChainVerify(db, { publicKey: parseLedgerPublicKey(params.key.publicKey), ...(params.handOvers ? { handOvers: params.handOvers } : {}), maxProblems: 1 })
  if (!chain.ok) {
    const first = chain.problems[0]
    throw new SnapshotError('ledger_tampered', `the ledger does not verify (${first?.kind ?? 'problem'}${chain.firstBadPosition ? ` at position ${chain.firstBadPosition}` : ''}): run \`hookledger ledger verify\``)
  }
  const cut = await snapshotCut(db)
  const base = await latestSignedSnapshot(db)
  if (base !== null && BigInt(base.descriptor.before_position) >= BigInt(cut.beforePosition)) {
    return { snapshot: base.descriptor, checkpoint: base.checkpointSeq, fresh: false, entriesFolded: 0, ms: Math.round(performance.now() - started) }
  }
  const built = await db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute((trx) => foldSnapshot(trx, cut, base, params.now(), params.onProgress, started))
  const checkpoint = await waitForSignature(db, built.snapshot.seq, params)
  await sql`select hookledger_ledger_snapshots_prune(${built.snapshot.seq}::bigint)`.execute(db)
  return { snapshot: built.snapshot, checkpoint, fresh: true, entriesFolded: built.entries, ms: Math.round(performance.now() - started) }
}

async function foldSnapshot(
  trx: Trx,
  cut: SnapshotCut,
  base: SignedSnapshot | null,
  now: Date,
  onProgress: ((p: { phase: string; rows: number; ms: number }) => void) | undefined,
  started: number,
): Promise<{ snapshot: CheckpointSnapshot; entries: number }> {
  // The forms `to_jsonb` renders, fixed whatever the server's settings (RowJsonCodec).
  await sql`set local timezone to 'UTC'`.execute(trx)
  await sql`set local bytea_output to 'hex'`.execute(trx)
  const seq = Number((await sql<{ seq: string }>`select (coalesce(max(seq), 0) + 1)::text as seq from ledger_snapshots`.execute(trx)).rows[0]!.seq)
  const range: PositionRange = { ...(base ? { from: base.descriptor.before_position } : {}), before: cut.beforePosition }
  const digest = new SnapshotDigest()
  const baseDigest = base ? new SnapshotDigest() : null
  const sink = new DifferenceSink(1)
  const counters: ReplayCounters = { phase: 'endpoints', rows: 0, entities: 0, held: 0, peakHeld: 0 }
  const gauge = new BufferGauge()
  const writer = new SnapshotRowWriter(trx, seq)
  let entries = 0
  let lastReport = performance.now()
  for (const table of ['endpoints', 'deliveries'] as const) {
    const entity: SnapshotEntity = table === 'endpoints' ? 'endpoint' : 'delivery'
    const codec = await RowJsonCodec.load(trx, table)
    const report = (current: { key: string }) => problemReporter(sink, table, current)
    const folded = await foldTable<object>(trx, {
      table,
      ...(table === 'endpoints'
        ? { ledgerQueries: [endpointEntries(range)], keyColumn: 'endpoint_id' as const, fold: new EndpointFold(report) }
        : { ledgerQueries: [deliveryEntries(range), retiredDeliveryEntries(range), fanoutDeliveryEntries(range)], keyColumn: 'delivery_id' as const, fold: new DeliveryFold(report) }),
      counters,
      gauge,
      fetchRows: 5_000,
      ...(base ? { start: snapshotStartRows(base.descriptor.seq, table) } : {}),
      live: false,
      onKey: async (key, sides) => {
        if (sides.start !== null) baseDigest!.push(entity, key, sides.start.snapshot_row)
        if (sides.replayed === null) return
        const json = await codec.renderRow(trx, sides.replayed)
        if (json instanceof RowJsonError) throw new SnapshotError('history_inconsistent', `${entity} ${key} cannot be stored: ${json.error}`)
        digest.push(entity, key, json)
        await writer.add(entity, key, json)
        if (onProgress && performance.now() - lastReport > 2000) {
          lastReport = performance.now()
          onProgress({ phase: table, rows: digest.counts.endpoint + digest.counts.delivery, ms: Math.round(lastReport - started) })
        }
      },
    })
    entries += folded.entries
  }
  await writer.flush()
  if (sink.total > 0) {
    const d = sink.kept[0]!
    throw new SnapshotError('history_inconsistent', `${d.table} ${d.key}: ${d.problem ?? d.kind}${d.position ? ` (position ${d.position})` : ''}: run \`hookledger ledger replay --verify\``)
  }
  if (base !== null && (baseDigest!.hex() !== base.descriptor.digest)) {
    throw new SnapshotError('snapshot_altered', `snapshot ${base.descriptor.seq}'s rows do not hash to the digest checkpoint ${base.checkpointSeq} signed: run \`hookledger ledger verify\``)
  }
  const snapshot: CheckpointSnapshot = {
    seq,
    before_position: cut.beforePosition,
    horizon: cut.horizon,
    digest: digest.hex(),
    endpoints: digest.counts.endpoint,
    deliveries: digest.counts.delivery,
  }
  await sql`select hookledger_snapshot_append(${JSON.stringify({ ...snapshot, base_seq: base?.descriptor.seq ?? null, created_at: now.toISOString() })}::jsonb)`.execute(trx)
  return { snapshot, entries }
}

/** Seals until a checkpoint carries snapshot `seq`; rows below its cut may still wait behind the horizon. */
async function waitForSignature(db: Db, seq: number, params: { key: LedgerSigningKey; now: () => Date; signWithinMs?: number }): Promise<number> {
  let signedBy: number | null = null
  const signed = await ledgerSealUntil(db, {
    key: params.key,
    now: params.now,
    withinMs: params.signWithinMs ?? 30_000,
    done: async () => {
      const row = (
        await sql<{ seq: string }>`select seq::text from ledger_checkpoints where snapshot is not null and (snapshot ->> 'seq')::bigint = ${seq}::bigint`.execute(db)
      ).rows[0]
      signedBy = row ? Number(row.seq) : null
      return signedBy !== null
    },
  })
  if (!signed || signedBy === null) {
    throw new SnapshotError('snapshot_unsigned', `snapshot ${seq} is stored, but no checkpoint could seal every row below its position yet: a long transaction holds the sealing horizon back; the sealer signs it when it ends`)
  }
  return signedBy
}

/** Rows per stored chunk: big enough to compress well, small enough to stream. */
const CHUNK_ROWS = 256

/** Appends a snapshot's rows as chunks (ledger_snapshot_rows), several chunks per statement. */
class SnapshotRowWriter {
  readonly #trx: Trx
  readonly #seq: number
  #entity: SnapshotEntity | null = null
  #chunk = 0
  #rows: RowJson[] = []
  #pending: { entity: SnapshotEntity; chunk: number; rows: RowJson[] }[] = []

  constructor(trx: Trx, seq: number) {
    this.#trx = trx
    this.#seq = seq
  }

  async add(entity: SnapshotEntity, _id: string, row: RowJson): Promise<void> {
    if (this.#entity !== entity) {
      this.#close()
      this.#entity = entity
      this.#chunk = 0
    }
    this.#rows.push(row)
    if (this.#rows.length >= CHUNK_ROWS) this.#close()
    if (this.#pending.length * CHUNK_ROWS >= WRITE_BATCH) await this.#write()
  }

  async flush(): Promise<void> {
    this.#close()
    await this.#write()
  }

  #close(): void {
    if (this.#rows.length === 0 || this.#entity === null) return
    this.#pending.push({ entity: this.#entity, chunk: this.#chunk++, rows: this.#rows })
    this.#rows = []
  }

  async #write(): Promise<void> {
    if (this.#pending.length === 0) return
    const chunks = this.#pending
    this.#pending = []
    await sql`select hookledger_snapshot_rows_append(${this.#seq}::bigint, ${JSON.stringify(chunks)}::jsonb)`.execute(this.#trx)
  }
}
