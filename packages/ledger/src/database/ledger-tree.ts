import { randomBytes } from 'node:crypto'
import { sql } from 'kysely'
import type { Db, Trx } from '@hookledger/store'
import { ledgerRowCommitment, type ChainRow } from '../proof/ledger-row-encoding.js'
import type { LedgerSigningKey } from '../proof/ledger-checkpoint.js'
import { decodeTreeEdge, edgeRoot, EMPTY_TREE_EDGE, type TileReader, type TreeEdge } from '../tree/index.js'
import { equalHashes } from '../tree/tree-hash.js'
import { ENTRY_LEVEL } from '../tree/tile-appends.js'
import { noteText, treeNoteVerifier, type TreeNote } from '../proof/ledger-tree-note.js'
import { parseCheckpointBody } from '../log/index.js'
import { CHAIN_ROW_COLUMNS, chainAfter, type CheckpointHeaderRow } from './ledger-chain-rows.js'

/** The log's origin is fixed at its first tree checkpoint; a different one configured later is refused. */
export class LogOriginError extends Error {
  readonly code = 'log_origin_changed'
  constructor(readonly stored: string, readonly configured: string) {
    super(`the log's origin is ${stored}; HOOKLEDGER_LOG_ORIGIN=${configured} would make it another log`)
  }
}

/** The stored tree does not match the last signed note: the sealer signs nothing on top of it. */
export class TreeInconsistentError extends Error {
  readonly code = 'tree_inconsistent'
}

/** The origin a log gets when none is configured: schema-less and URL-like, unique per install. */
export function defaultLogOrigin(): string {
  return `hookledger.local/${randomBytes(8).toString('hex')}`
}

/** The installation's log origin, once its first tree checkpoint is written (else null). */
export async function logOriginStored(db: Db | Trx): Promise<string | null> {
  return (await sql<{ origin: string }>`select origin from ledger_log`.execute(db)).rows[0]?.origin ?? null
}

/**
 * Names the log before anything seals (the composition root): keeps `configured` (else a fresh
 * default) if the log has no origin yet, and answers the stored one; throws LogOriginError when
 * `configured` differs from it.
 */
export async function logOriginEnsure(db: Db, configured: string | undefined): Promise<string> {
  const wanted = configured ?? defaultLogOrigin()
  const stored = (await sql<{ origin: string }>`select hookledger_log_origin_ensure(${wanted}) as origin`.execute(db)).rows[0]!.origin
  if (configured !== undefined && stored !== configured) throw new LogOriginError(stored, configured)
  return stored
}

/** Where the tree stands before a seal: its origin, its right edge, and old rows still to enter it. */
export interface TreeBefore {
  readonly origin: string
  readonly edge: TreeEdge
  /** Commitments of rows sealed before the tree existed (an upgraded ledger), in chain order. */
  readonly backlog: Uint8Array[]
}

/**
 * The tree after the latest checkpoint, checked against that checkpoint's signed note (its root
 * must be the stored edge's, and a note of this key must verify), so the sealer never signs a
 * tree that does not extend its own last one. A ledger sealed before the tree existed is
 * brought in from its first row.
 */
export async function treeBefore(
  trx: Trx,
  latest: CheckpointHeaderRow | undefined,
  params: { key: LedgerSigningKey; origin?: string | undefined },
): Promise<TreeBefore> {
  const stored = await logOriginStored(trx)
  if (stored !== null && params.origin !== undefined && stored !== params.origin) throw new LogOriginError(stored, params.origin)
  const origin = stored ?? params.origin ?? defaultLogOrigin()
  if (!latest) return { origin, edge: EMPTY_TREE_EDGE, backlog: [] }
  const row = (
    await sql<{ tree_note: string | null; tree_edge: Buffer | null }>`
      select tree_note, tree_edge from ledger_checkpoints where seq = ${latest.seq}::bigint
    `.execute(trx)
  ).rows[0]!
  const size = Number(latest.total)
  if (row.tree_note === null || row.tree_edge === null) return { origin, edge: EMPTY_TREE_EDGE, backlog: await backlogOf(trx, latest) }
  const edge = decodeTreeEdge(size, new Uint8Array(row.tree_edge))
  const body = parseCheckpointBody(noteText(row.tree_note))
  if (body.origin !== origin || Number(body.size) !== size || !equalHashes(body.root, edgeRoot(edge))) {
    throw new TreeInconsistentError(`checkpoint ${latest.seq}'s note does not sign the stored tree of ${size} rows; the sealer signs nothing on top of it`)
  }
  if (latest.key_id === params.key.keyId && !treeNoteVerifier(origin, params.key.publicKey)(row.tree_note)) {
    throw new TreeInconsistentError(`checkpoint ${latest.seq}'s note is not signed by this key; the sealer signs nothing on top of it`)
  }
  return { origin, edge, backlog: [] }
}

/** The commitments of every row the checkpoints sealed before the tree existed. */
async function backlogOf(trx: Trx, latest: CheckpointHeaderRow): Promise<Uint8Array[]> {
  const out: Uint8Array[] = []
  const last = { tx_id: latest.last_tx_id!, position: latest.last_position! }
  let after: { tx_id: string; position: string } | null = null
  for (;;) {
    const rows: ChainRow[] = (
      await sql<ChainRow>`
        select ${CHAIN_ROW_COLUMNS} from ledger
        where ${chainAfter(after)} and (tx_id, position) <= (${last.tx_id}::xid8, ${last.position}::bigint)
        order by ledger.tx_id, ledger.position limit 20000
      `.execute(trx)
    ).rows
    for (const r of rows) out.push(ledgerRowCommitment(r))
    if (rows.length < 20000) break
    const tail = rows[rows.length - 1]!
    after = { tx_id: tail.tx_id, position: tail.position }
  }
  if (out.length !== Number(latest.total)) {
    throw new TreeInconsistentError(
      `the tree starts from the ledger's first row, but ${Number(latest.total) - out.length} of the ${latest.total} rows sealed before it were archived`,
    )
  }
  return out
}

/** The newest checkpoint's note (the log's signed tree head), or null before the first. */
export async function latestTreeNote(db: Db | Trx): Promise<TreeNote | null> {
  const row = (
    await sql<{ seq: string; total: string; tree_note: string }>`
      select seq::text as seq, total::text as total, tree_note from ledger_checkpoints
      where tree_note is not null order by ledger_checkpoints.seq desc limit 1
    `.execute(db)
  ).rows[0]
  return row ? { seq: Number(row.seq), size: Number(row.total), note: row.tree_note } : null
}

/** The newest note of a tree of exactly `size` rows, or null. */
export async function treeNoteOfSize(db: Db | Trx, size: number): Promise<TreeNote | null> {
  const row = (
    await sql<{ seq: string; tree_note: string }>`
      select seq::text as seq, tree_note from ledger_checkpoints
      where tree_note is not null and total = ${size}::bigint order by ledger_checkpoints.seq desc limit 1
    `.execute(db)
  ).rows[0]
  return row ? { seq: Number(row.seq), size, note: row.tree_note } : null
}

/** A tile to read: a hash level 0…63 or the entries (`'entries'`), and the width wanted. */
export interface TileRequest {
  readonly level: number | 'entries'
  readonly index: number
  readonly width: number
}

/**
 * The first `width` hashes of each requested tile (for entries: the commitments), one query for
 * the lot; null where the stored tile is narrower (a size no checkpoint reached).
 */
export async function treeTilesRead(db: Db | Trx, requests: readonly TileRequest[]): Promise<(Uint8Array | null)[]> {
  if (requests.length === 0) return []
  const levels = requests.map((r) => (r.level === 'entries' ? ENTRY_LEVEL : r.level))
  const indexes = requests.map((r) => String(r.index))
  const rows = (
    await sql<{ level: number; index: string; hashes: Buffer }>`
      select t.level, t.index::text as index, t.hashes
      from unnest(${levels}::smallint[], ${indexes}::bigint[]) as r(level, index)
      join ledger_tree_tiles t on t.level = r.level and t.index = r.index
    `.execute(db)
  ).rows
  const byKey = new Map(rows.map((r) => [`${r.level}/${r.index}`, r.hashes]))
  return requests.map((r, i) => {
    const hashes = byKey.get(`${levels[i]}/${r.index}`)
    if (!hashes || hashes.length < r.width * 32) return null
    return new Uint8Array(hashes.subarray(0, r.width * 32))
  })
}

/** Tiles read from the database for proofs: one query per proof, each tile as wide as asked. */
export function databaseTileReader(db: Db | Trx): TileReader {
  return async (tiles) => {
    const answers = await treeTilesRead(db, tiles)
    return answers.map((hashes, i) => {
      if (!hashes) throw new Error(`tile ${tiles[i]!.level}/${tiles[i]!.index} is not ${tiles[i]!.width} hashes wide: the stored tree lags its checkpoint`)
      return hashes
    })
  }
}
