import { sql } from 'kysely'
import type { Db } from '@hookledger/store'
import { ed25519NoteVerifier, encodeVerifierKey, openCheckpoint, parseCheckpointBody, type TlogCheckpoint } from '../log/index.js'
import { ledgerKeysAccepted, type LedgerKeyHandOver } from '../proof/ledger-key-rotation.js'
import { ledgerRowCommitment, logLeafHash, type ChainRow } from '../proof/ledger-row-encoding.js'
import { merkleRoot } from '../proof/merkle-tree.js'
import { noteText } from '../proof/ledger-tree-note.js'
import { consistencyProofFromTiles, treeRootFromTiles, verifyConsistency } from '../tree/index.js'
import { equalHashes } from '../tree/tree-hash.js'
import { CHAIN_ROW_COLUMNS, chainAfter } from './ledger-chain-rows.js'
import { databaseTileReader, latestTreeNote, logOriginStored, treeTilesRead } from './ledger-tree.js'

/** One thing wrong with the log's tree. */
export interface TreeProblem {
  readonly kind:
    | 'note_unsigned' // a checkpoint's note does not verify with a trusted key
    | 'tiles_root' // the stored tiles do not give the signed root
    | 'tile_hash' // a stored hash is not the hash of what is below it
    | 'row_commitment' // a row is not the entry the tree holds for it
    | 'not_consistent' // a checkpoint the log signed is not a prefix of its newest tree
    | 'since_unsigned' // the saved checkpoint does not verify with the trusted key
    | 'rolled_back' // the log is smaller than a checkpoint it signed before
    | 'rewritten' // the saved checkpoint's tree is not a prefix of today's
  readonly size: number | null
  readonly detail: string
  /**
   * `rolled_back` against a saved checkpoint: the rows it signed that this log no longer holds
   * (leaf indexes `from` ≤ i < `to`), after this log's newest checkpoint — what a failover to an
   * asynchronous standby lost, or what a restored backup lacks. Rows written after the saved
   * checkpoint and never sealed may be lost too; nothing signed names them.
   */
  readonly lost?: { readonly from: number; readonly to: number; readonly rows: number; readonly afterCheckpoint: number }
}

export interface TreeVerifyReport {
  readonly ok: boolean
  readonly origin: string | null
  /** The newest checkpoint's tree size (0: no tree yet). */
  readonly size: number
  /** Leaves whose rows, entries and hashes were checked. */
  readonly leavesChecked: number
  /** Signed checkpoints proven to be prefixes of the newest tree. */
  readonly checkpointsProven: number
  readonly problems: TreeProblem[]
}

/** Leaves a default (not --full) run checks against their rows: the newest ones. */
const TAIL_LEAVES = 65_536
/** Earlier checkpoints a default run proves consistent with the newest (each O(log n) hashes). */
const TAIL_CHECKPOINTS = 256

/**
 * `ledger verify`'s tree pass: the newest checkpoint's note verifies with a trusted key, the
 * stored tiles give its root, every stored hash over the checked leaves is the hash of what is
 * below it, each checked row's commitment is the entry the tree holds at its leaf index, earlier
 * signed checkpoints are prefixes of the newest tree (consistency proofs from the tiles), and a
 * checkpoint saved outside the database (`since`: a note file, or the one a witness cosigned)
 * is too — so deleting the newest checkpoints and their rows, or rewriting the past and
 * re-signing it, fails with the size it fell back to. `full` checks every leaf whose row is
 * still in the database and every checkpoint; otherwise the newest ones.
 */
export async function ledgerTreeVerify(
  db: Db,
  params: { publicKey: Uint8Array; handOvers?: readonly LedgerKeyHandOver[]; since?: string | undefined; full?: boolean },
): Promise<TreeVerifyReport> {
  const problems: TreeProblem[] = []
  const keys = ledgerKeysAccepted(params.publicKey, params.handOvers ?? [])
  const origin = await logOriginStored(db)
  const opened = (note: string, name: string): TlogCheckpoint | null => {
    try {
      return openCheckpoint(note, keys.map((k) => ed25519NoteVerifier(encodeVerifierKey(name, k)))).checkpoint
    } catch {
      return null
    }
  }
  const since = params.since !== undefined ? savedCheckpoint(params.since, opened, problems) : null
  const head = await latestTreeNote(db)
  if (!head || origin === null) {
    if (since && since.size > 0n) problems.push({ kind: 'rolled_back', size: 0, detail: `the log holds no checkpoint, but one of ${since.size} rows was signed before: its checkpoints were deleted` })
    return { ok: problems.length === 0, origin, size: 0, leavesChecked: 0, checkpointsProven: 0, problems }
  }
  const size = head.size
  const reader = databaseTileReader(db)
  const headBody = opened(head.note, origin)
  if (!headBody) problems.push({ kind: 'note_unsigned', size, detail: `checkpoint ${head.seq}'s note does not verify with a trusted key under origin ${origin}` })
  const root = headBody?.root ?? parseCheckpointBody(noteText(head.note)).root
  const tilesRoot = await treeRootFromTiles(size, reader).catch(() => null)
  if (!tilesRoot || !equalHashes(tilesRoot, root)) problems.push({ kind: 'tiles_root', size, detail: `the stored tiles do not give the root checkpoint ${head.seq} signed for ${size} rows` })

  // A saved checkpoint: today's tree must extend it.
  if (since) {
    const old = Number(since.size)
    if (since.origin !== origin) problems.push({ kind: 'rewritten', size: old, detail: `the saved checkpoint is of log ${since.origin}, this log is ${origin}` })
    else if (old > size) {
      problems.push({
        kind: 'rolled_back',
        size,
        detail: `the log fell back to ${size} rows; it signed ${old} before (its newest checkpoints or rows were deleted, a backup was restored, or it failed over to a standby that lacked them): lost leaves ${size}..${old - 1} (${old - size} rows signed after checkpoint ${head.seq})`,
        lost: { from: size, to: old, rows: old - size, afterCheckpoint: head.seq },
      })
    }
    else if (!(await consistent(old, since.root, size, root, reader))) {
      problems.push({ kind: 'rewritten', size: old, detail: `the saved checkpoint of ${old} rows is not a prefix of today's tree: the history before it was rewritten` })
    }
  }

  // Earlier checkpoints, each a prefix of the newest tree; and none larger than it.
  const notes = (
    await sql<{ seq: string; total: string; tree_note: string }>`
      select seq::text as seq, total::text as total, tree_note from ledger_checkpoints where tree_note is not null
      order by ledger_checkpoints.seq desc ${params.full ? sql`` : sql`limit ${TAIL_CHECKPOINTS}`}
    `.execute(db)
  ).rows
  let checkpointsProven = 0
  const provenSizes = new Map<number, boolean>()
  for (const n of notes) {
    const total = Number(n.total)
    const body = opened(n.tree_note, origin)
    if (!body) {
      problems.push({ kind: 'note_unsigned', size: total, detail: `checkpoint ${n.seq}'s note does not verify with a trusted key` })
      continue
    }
    let ok = provenSizes.get(total)
    if (ok === undefined) provenSizes.set(total, (ok = total <= size && (await consistent(total, body.root, size, root, reader))))
    if (ok) checkpointsProven++
    else problems.push({ kind: 'not_consistent', size: total, detail: `checkpoint ${n.seq} (${total} rows) is not a prefix of the newest tree` })
  }

  const leavesChecked = await checkLeaves(db, { size, from: params.full ? 0 : Math.max(0, size - TAIL_LEAVES) }, problems)
  return { ok: problems.length === 0, origin, size, leavesChecked, checkpointsProven, problems }
}

function savedCheckpoint(note: string, opened: (note: string, name: string) => TlogCheckpoint | null, problems: TreeProblem[]): TlogCheckpoint | null {
  let origin: string
  try {
    origin = parseCheckpointBody(noteText(note)).origin
  } catch (err) {
    problems.push({ kind: 'since_unsigned', size: null, detail: `the saved checkpoint is not a checkpoint note: ${(err as Error).message}` })
    return null
  }
  const body = opened(note, origin)
  if (!body) problems.push({ kind: 'since_unsigned', size: null, detail: 'the saved checkpoint does not verify with a trusted key' })
  return body
}

async function consistent(oldSize: number, oldRoot: Uint8Array, size: number, root: Uint8Array, reader: ReturnType<typeof databaseTileReader>): Promise<boolean> {
  try {
    return verifyConsistency(oldSize, size, await consistencyProofFromTiles(oldSize, size, reader), oldRoot, root)
  } catch {
    return false
  }
}

/**
 * Leaves [from, size) whose rows are still in the database: each row's commitment is the entry
 * at its leaf index, each leaf hash is SHA-256(0x00 ‖ entry), and each full tile's hash is
 * stored one level up. A checkpoint boundary at or below `from` is where the rows are read from.
 */
async function checkLeaves(db: Db, params: { size: number; from: number }, problems: TreeProblem[]): Promise<number> {
  // Start at a checkpoint boundary whose rows are all still here (archived ones are gone, their tiles stay).
  const start = (
    await sql<{ before: string; last_tx_id: string | null; last_position: string | null }>`
      select c.total::text as before, c.last_tx_id::text, c.last_position::text from ledger_checkpoints c
      where c.total <= ${params.from}::bigint
        and not exists (select 1 from ledger l where l.kind = 'ledger.retention' and (l.payload ->> 'through_checkpoint')::bigint > c.seq and (l.payload ->> 'partitions')::int > 0)
      order by c.seq desc limit 1
    `.execute(db)
  ).rows[0]
  let index = start ? Number(start.before) : 0
  let after = start?.last_tx_id ? { tx_id: start.last_tx_id, position: start.last_position! } : null
  if (!start && (await sql`select 1 from ledger where kind = 'ledger.retention' limit 1`.execute(db)).rows.length > 0) return 0
  const first = index
  while (index < params.size) {
    const rows = (
      await sql<ChainRow>`
        select ${CHAIN_ROW_COLUMNS} from ledger where ${chainAfter(after)}
        order by ledger.tx_id, ledger.position limit ${Math.min(4096, params.size - index)}
      `.execute(db)
    ).rows
    if (rows.length === 0) break
    const tileFrom = Math.floor(index / 256)
    const tileTo = Math.floor((index + rows.length - 1) / 256)
    const requests = []
    for (let t = tileFrom; t <= tileTo; t++) {
      const width = Math.min(256, params.size - t * 256)
      requests.push({ level: 'entries' as const, index: t, width }, { level: 0, index: t, width })
    }
    const tiles = await treeTilesRead(db, requests)
    rows.forEach((row, i) => {
      const leaf = index + i
      const t = Math.floor(leaf / 256) - tileFrom
      const entries = tiles[t * 2]
      const hashes = tiles[t * 2 + 1]
      const at = (leaf % 256) * 32
      const entry = entries?.subarray(at, at + 32)
      if (!entry || !equalHashes(entry, ledgerRowCommitment(row))) {
        problems.push({ kind: 'row_commitment', size: leaf, detail: `row ${row.position} (${row.kind}) is not the entry the tree holds at leaf ${leaf}` })
      } else if (!hashes || !equalHashes(hashes.subarray(at, at + 32), logLeafHash(entry))) {
        problems.push({ kind: 'tile_hash', size: leaf, detail: `leaf ${leaf}'s hash is not SHA-256(0x00 ‖ its entry)` })
      }
    })
    index += rows.length
    const tail = rows[rows.length - 1]!
    after = { tx_id: tail.tx_id, position: tail.position }
  }
  await checkUpperLevels(db, { from: first, size: params.size }, problems)
  return index - first
}

/** For every full tile over [from, size), at every level: its Merkle root is the hash stored one level up. */
async function checkUpperLevels(db: Db, params: { from: number; size: number }, problems: TreeProblem[]): Promise<void> {
  let span = 256 // leaves under one hash of the level above
  for (let level = 0; Math.floor(params.size / span) > 0; level++, span *= 256) {
    const firstTile = Math.floor(params.from / span)
    const fullTiles = Math.floor(params.size / span)
    for (let t = firstTile; t < fullTiles; t += 64) {
      const batch = Array.from({ length: Math.min(64, fullTiles - t) }, (_, i) => t + i)
      const below = await treeTilesRead(db, batch.map((index) => ({ level, index, width: 256 })))
      const aboveWidth = (index: number) => Math.min(256, fullTiles - Math.floor(index / 256) * 256)
      const above = await treeTilesRead(db, [...new Set(batch.map((i) => Math.floor(i / 256)))].map((index) => ({ level: level + 1, index, width: aboveWidth(index * 256) })))
      batch.forEach((index, i) => {
        const tile = below[i]
        const parent = above[Math.floor(index / 256) - Math.floor(batch[0]! / 256)]
        const stored = parent?.subarray((index % 256) * 32, (index % 256) * 32 + 32)
        const hashes = tile ? Array.from({ length: 256 }, (_, k) => tile.subarray(k * 32, k * 32 + 32)) : null
        if (!hashes || !stored || !equalHashes(merkleRoot(hashes), stored)) {
          problems.push({ kind: 'tile_hash', size: index * span, detail: `tile ${level}/${index}'s root is not the hash stored at level ${level + 1}` })
        }
      })
    }
  }
}
