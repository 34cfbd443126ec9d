import { chainNextBytes, ledgerRowBytes, ledgerRowSealHashes, logLeafHash, type ChainRow } from '../proof/ledger-row-encoding.js'
import {
  checkpointHash,
  signCheckpoint,
  type CheckpointSnapshot,
  type LedgerCheckpoint,
  type LedgerSigningKey,
} from '../proof/ledger-checkpoint.js'
import { merkleRoot } from '../proof/merkle-tree.js'
import { signTreeNote } from '../proof/ledger-tree-note.js'
import { edgeAppend, edgeRoot, encodeTreeEdge, type StoredHash, type TreeEdge } from '../tree/index.js'
import { tileAppends } from '../tree/tile-appends.js'
import { treeBefore } from './ledger-tree.js'
import { sql } from 'kysely'
import type { Db, Trx } from '@hookledger/store'
import { CHAIN_ROW_COLUMNS, CHAIN_START, CHECKPOINT_HEADER_COLUMNS, chainAfter, checkpointOf, type CheckpointHeaderRow } from './ledger-chain-rows.js'

/** Rows one checkpoint seals at most: bounds a receipt's proof work and a seal's transaction. */
export const CHECKPOINT_MAX_ROWS = 20_000

/**
 * Rows hashed between two turns of the event loop (~8 ms of CPU): the sealer runs in the
 * delivering process, and one checkpoint's 10,000 rows hashed in one go held every in-flight
 * request's callbacks back for ~150 ms a second.
 */
const SEAL_SLICE_ROWS = 512

function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve))
}

/** edgeAppend over the entries' leaf hashes, a slice at a time (see SEAL_SLICE_ROWS). */
async function edgeAppendSliced(edge: TreeEdge, commitments: readonly Uint8Array[]): Promise<{ edge: TreeEdge; stored: StoredHash[] }> {
  let grown = edge
  const stored: StoredHash[] = []
  for (let at = 0; at < commitments.length || at === 0; at += SEAL_SLICE_ROWS) {
    if (at > 0) await yieldToEventLoop()
    const next = edgeAppend(grown, commitments.slice(at, at + SEAL_SLICE_ROWS).map(logLeafHash))
    grown = next.edge
    for (const hash of next.stored) stored.push(hash)
  }
  return { edge: grown, stored }
}

/** What one seal run did. */
export interface SealResult {
  readonly checkpoints: LedgerCheckpoint[]
  readonly rows: number
}

/**
 * Seals the ledger behind the writers: reads the rows after the last checkpoint in chain order
 * ((tx_id, position), only transactions older than every running one, so no row can still
 * appear before them), extends the hash chain, builds the Merkle tree over them, and appends a
 * signed checkpoint — repeated until caught up, at most {@link CHECKPOINT_MAX_ROWS} rows each.
 * Writers never wait on it. One sealer at a time (an advisory lock: a second one returns
 * without sealing). With `force`, a checkpoint is written even when no row is new (a signed
 * "nothing changed up to now"). A projection snapshot waiting for its checkpoint
 * (ledger-snapshot.ts) is signed by the first checkpoint whose rows include every row below
 * its position, even one that seals nothing new.
 */
export async function ledgerSeal(
  db: Db,
  params: SealParams & {
    force?: boolean
    maxRows?: number
    /** Told of each checkpoint as it is appended, before the next one of a catch-up is read. */
    onCheckpoint?: (checkpoint: LedgerCheckpoint) => void
  },
): Promise<SealResult> {
  const maxRows = params.maxRows ?? CHECKPOINT_MAX_ROWS
  const checkpoints: LedgerCheckpoint[] = []
  let rows = 0
  for (;;) {
    const sealed = await sealOne(db, params, maxRows, params.force === true && checkpoints.length === 0)
    if (!sealed) break
    checkpoints.push(sealed.checkpoint)
    rows += sealed.rows
    params.onCheckpoint?.(sealed.checkpoint)
    if (sealed.rows < maxRows) break
  }
  return { checkpoints, rows }
}

type SealParams = { key: LedgerSigningKey; now: Date; origin?: string | undefined }

/** What a seal reads before it computes: the newest checkpoint and the rows after it. */
interface SealInput {
  readonly start: typeof CHAIN_START
  readonly batch: ChainRow[]
  readonly snapshot: CheckpointSnapshot | null
  readonly tree: Awaited<ReturnType<typeof treeBefore>>
}

const SEALER_LOCK = sql`pg_try_advisory_xact_lock(hashtext('hookledger.ledger_sealer'))`

/**
 * One checkpoint: read, compute, append. No connection is held while the rows are hashed (a
 * checkpoint's 10,000 rows are ~150 ms of CPU, and the sealer shares the delivering process's
 * small pool): the read and the append are two short transactions. The append re-takes the
 * sealer's lock and finds the checkpoint it read still the newest, else another sealer won the
 * race and this one returns without sealing, as when it cannot take the lock. The database
 * checks again that the checkpoint seals exactly the rows after the previous one.
 */
async function sealOne(db: Db, params: SealParams, maxRows: number, force: boolean): Promise<{ checkpoint: LedgerCheckpoint; rows: number } | null> {
  const input = await db.transaction().execute(async (trx): Promise<SealInput | null> => {
    const locked = await sql<{ ok: boolean }>`select ${SEALER_LOCK} as ok`.execute(trx)
    if (!locked.rows[0]?.ok) return null
    const latest = (await sql<CheckpointHeaderRow>`select ${CHECKPOINT_HEADER_COLUMNS} from ledger_checkpoints order by ledger_checkpoints.seq desc limit 1`.execute(trx)).rows[0]
    const prev = latest ? checkpointOf(latest) : null
    const start = prev
      ? { seq: prev.seq, last: prev.last, total: prev.total, chainHash: Buffer.from(prev.chain_hash, 'hex'), checkpointHash: checkpointHash(prev) }
      : CHAIN_START
    // Always the ordered walk of the chain index (a merge of the partitions' scans): right
    // after a bulk load the statistics can make a full sort of every unsealed row look cheaper.
    await sql`set local enable_sort = off`.execute(trx)
    const batch = (
      await sql<ChainRow>`
        select ${CHAIN_ROW_COLUMNS} from ledger
        where ${chainAfter(start.last)} and tx_id < pg_snapshot_xmin(pg_current_snapshot())
        order by ledger.tx_id, ledger.position limit ${maxRows}
      `.execute(trx)
    ).rows
    const tail = batch[batch.length - 1]
    const snapshot = await snapshotCoveredBy(trx, tail ? { tx_id: tail.tx_id, position: tail.position } : start.last)
    const tree = await treeBefore(trx, latest, { key: params.key, origin: params.origin })
    return { start, batch, snapshot, tree }
  })
  if (input === null) return null
  const { start, batch, snapshot, tree } = input
  if (batch.length === 0 && !force && snapshot === null && tree.backlog.length === 0) return null
  const first = batch[0]
  const tail = batch[batch.length - 1]
  const last = tail ? { tx_id: tail.tx_id, position: tail.position } : start.last
  let head: Uint8Array = start.chainHash
  const leaves: Uint8Array[] = []
  // The one growing tree's entries: the rows' commitments (after any rows sealed before it existed).
  const commitments: Uint8Array[] = [...tree.backlog]
  for (let i = 0; i < batch.length; i++) {
    if (i > 0 && i % SEAL_SLICE_ROWS === 0) await yieldToEventLoop()
    const bytes = ledgerRowBytes(batch[i]!)
    const hashes = ledgerRowSealHashes(bytes)
    leaves.push(hashes.segmentLeaf)
    commitments.push(hashes.commitment)
    head = chainNextBytes(head, bytes)
  }
  const grown = await edgeAppendSliced(tree.edge, commitments)
  const tiles = tileAppends(tree.edge.size, commitments, grown.stored)
  const checkpoint = signCheckpoint(params.key, {
    ...(snapshot !== null ? { snapshot } : {}),
    seq: start.seq + 1,
    first: first ? { tx_id: first.tx_id, position: first.position } : null,
    last,
    count: batch.length,
    total: start.total + batch.length,
    chain_hash: Buffer.from(head).toString('hex'),
    merkle_root: Buffer.from(merkleRoot(leaves)).toString('hex'),
    prev_checkpoint_hash: start.checkpointHash,
    created_at: params.now.toISOString(),
  })
  // The database checks it seals exactly the rows after the previous checkpoint (the baseline migration).
  const row = {
    seq: checkpoint.seq,
    first_tx_id: checkpoint.first?.tx_id ?? null,
    first_position: checkpoint.first?.position ?? null,
    last_tx_id: checkpoint.last?.tx_id ?? null,
    last_position: checkpoint.last?.position ?? null,
    count: checkpoint.count,
    total: checkpoint.total,
    chain_hash: checkpoint.chain_hash,
    merkle_root: checkpoint.merkle_root,
    prev_checkpoint_hash: checkpoint.prev_checkpoint_hash,
    created_at: checkpoint.created_at,
    key_id: checkpoint.key_id,
    signature: checkpoint.signature,
    leaf_positions: batch.map((r) => r.position),

    snapshot: checkpoint.snapshot ?? null,
    origin: tree.origin,
    tree_note: signTreeNote(params.key, tree.origin, grown.edge.size, edgeRoot(grown.edge)),
    tree_edge_hex: Buffer.from(encodeTreeEdge(grown.edge)).toString('hex'),
    tiles: tiles.map((t) => ({ level: t.level, index: t.index, offset: t.offset, count: t.hashes.length / 32 })),
  }
  const leafBytes = Buffer.concat(leaves)
  const tileBytes = Buffer.concat(tiles.map((t) => t.hashes))
  const appended = await db.transaction().execute(async (trx) => {
    const still = (
      await sql<{ ok: boolean; newest: string | null }>`
        select ${SEALER_LOCK} as ok, (select max(seq)::text from ledger_checkpoints) as newest
      `.execute(trx)
    ).rows[0]
    if (!still?.ok || (still.newest === null ? 0 : Number(still.newest)) !== start.seq) return false
    await sql`select hookledger_checkpoint_append(${JSON.stringify(row)}::jsonb, ${leafBytes}::bytea, ${tileBytes}::bytea)`.execute(trx)
    return true
  })
  return appended ? { checkpoint, rows: batch.length } : null
}

/**
 * Seals, then asks `done()`, until it holds or `withinMs` has passed (at least one seal), backing
 * off 25 ms doubling to 1 s: for what waits on a checkpoint — a snapshot's signature, a
 * retention entry — while the rows below it may be held back by the horizon. Whether `done()`
 * held.
 */
export async function ledgerSealUntil(
  db: Db,
  params: { key: LedgerSigningKey; now: () => Date; withinMs: number; maxRows?: number; done: () => Promise<boolean> },
): Promise<boolean> {
  const deadline = Date.now() + params.withinMs
  for (let wait = 25; ; wait = Math.min(wait * 2, 1000)) {
    await ledgerSeal(db, { key: params.key, now: params.now(), ...(params.maxRows !== undefined ? { maxRows: params.maxRows } : {}) })
    if (await params.done()) return true
    if (Date.now() >= deadline) return false
    await new Promise((resolve) => setTimeout(resolve, wait))
  }
}

/**
 * The oldest snapshot no checkpoint has signed yet, if a checkpoint ending at `last` would seal
 * every row below its position (rows below it may have later tx_ids than rows above it, so
 * they can still be waiting behind the horizon).
 */
async function snapshotCoveredBy(trx: Trx, last: { tx_id: string; position: string } | null): Promise<CheckpointSnapshot | null> {
  const pending = (
    await sql<{ seq: string; before_position: string; horizon: string; digest: string; endpoints: string; deliveries: string }>`
      select s.seq::text, s.before_position::text, s.horizon::text, s.digest, s.endpoints::text, s.deliveries::text
      from ledger_snapshots s
      where s.seq > coalesce((select max((c.snapshot ->> 'seq')::bigint) from ledger_checkpoints c where c.snapshot is not null), 0)
      order by s.seq limit 1
    `.execute(trx)
  ).rows[0]
  if (pending === undefined) return null
  const unsealed = await sql`
    select 1 from ledger
    where position < ${pending.before_position}::bigint and ${chainAfter(last)}
    limit 1
  `.execute(trx)
  if (unsealed.rows.length > 0) return null
  return {
    seq: Number(pending.seq),
    before_position: pending.before_position,
    horizon: pending.horizon,
    digest: pending.digest,
    endpoints: Number(pending.endpoints),
    deliveries: Number(pending.deliveries),
  }
}

/** The position of the newest sealed row and of the newest row (sealing lag, for metrics). */
export async function ledgerSealState(db: Db): Promise<{ sealedPosition: string | null; checkpoints: number; latestPosition: string | null }> {
  const row = (
    await sql<{ sealed: string | null; checkpoints: string; latest: string | null }>`
      select (select last_position::text from ledger_checkpoints order by seq desc limit 1) as sealed,
             (select count(*)::text from ledger_checkpoints) as checkpoints,
             (select max(position)::text from ledger) as latest
    `.execute(db)
  ).rows[0]!
  return { sealedPosition: row.sealed, checkpoints: Number(row.checkpoints), latestPosition: row.latest }
}
