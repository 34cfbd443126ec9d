import { CHAIN_GENESIS, type ChainRow } from '../proof/ledger-row-encoding.js'
import { CHECKPOINT_GENESIS_HASH, type CheckpointSnapshot, type LedgerCheckpoint } from '../proof/ledger-checkpoint.js'
import { MERKLE_HASH_BYTES } from '../proof/merkle-tree.js'
import { type SealedLeaves } from '../proof/ledger-chain-verifier.js'
import { sql, type RawBuilder } from 'kysely'
import type { Trx } from '@hookledger/store'

/**
 * How the chain reads ledger rows: every field as exact text (position and tx_id as decimals,
 * occurred_at in UTC with microseconds), so the bytes hashed are the bytes stored. The aliases
 * shadow the columns in ORDER BY: order by `ledger.tx_id, ledger.position` (the numbers), never
 * by the bare names (text: "1000" sorts before "999").
 */
export const CHAIN_ROW_COLUMNS = sql`
  position::text as position, tx_id::text as tx_id,
  to_char(occurred_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as occurred_at,
  owner_id, kind, endpoint_id::text as endpoint_id, delivery_id::text as delivery_id, event_id,
  payload, actor
`

/** `(tx_id, position) > (after)`, or no bound when `after` is null. */
export const chainAfter = (after: { tx_id: string; position: string } | null): RawBuilder<unknown> =>
  after ? sql`(tx_id, position) > (${after.tx_id}::xid8, ${after.position}::bigint)` : sql`true`

/** A stored checkpoint row as the database returns it. */
export interface CheckpointRow {
  readonly seq: string
  readonly first_tx_id: string | null
  readonly first_position: string | null
  readonly last_tx_id: string | null
  readonly last_position: string | null
  readonly count: string
  readonly total: string
  readonly chain_hash: string
  readonly merkle_root: string
  readonly prev_checkpoint_hash: string
  readonly created_at: string
  readonly key_id: string
  readonly signature: string
  readonly snapshot: CheckpointSnapshot | null
  readonly leaf_positions: string[]
  readonly leaf_hashes: Buffer
}

/** A stored checkpoint without its leaves (CHECKPOINT_HEADER_COLUMNS). */
export type CheckpointHeaderRow = Omit<CheckpointRow, 'leaf_positions' | 'leaf_hashes'>

/** The same caveat: order by `ledger_checkpoints.seq`, not the text alias. */
export const CHECKPOINT_HEADER_COLUMNS = sql`
  seq::text as seq, first_tx_id::text as first_tx_id, first_position::text as first_position,
  last_tx_id::text as last_tx_id, last_position::text as last_position, count::text as count,
  total::text as total, chain_hash, merkle_root, prev_checkpoint_hash, created_at, key_id, signature,
  snapshot
`
export const CHECKPOINT_COLUMNS = sql`
  ${CHECKPOINT_HEADER_COLUMNS}, leaf_positions::text[] as leaf_positions, leaf_hashes
`

/** The signed checkpoint of a stored row. */
export function checkpointOf(row: CheckpointHeaderRow): LedgerCheckpoint {
  const cp: LedgerCheckpoint = {
    seq: Number(row.seq),
    first: row.first_tx_id !== null ? { tx_id: row.first_tx_id, position: row.first_position! } : null,
    last: row.last_tx_id !== null ? { tx_id: row.last_tx_id, position: row.last_position! } : null,
    count: Number(row.count),
    total: Number(row.total),
    chain_hash: row.chain_hash,
    merkle_root: row.merkle_root,
    prev_checkpoint_hash: row.prev_checkpoint_hash,
    created_at: row.created_at,
    key_id: row.key_id,
    signature: row.signature,
  }
  return row.snapshot === null ? cp : { ...cp, snapshot: row.snapshot }
}

/** The leaves a stored checkpoint sealed, in chain order. */
export function leavesOf(row: Pick<CheckpointRow, 'leaf_positions' | 'leaf_hashes'>): SealedLeaves {
  const hashes: Uint8Array[] = []
  for (let i = 0; i < row.leaf_hashes.length; i += MERKLE_HASH_BYTES) {
    hashes.push(new Uint8Array(row.leaf_hashes.subarray(i, i + MERKLE_HASH_BYTES)))
  }
  return { positions: row.leaf_positions, hashes }
}

/** The leaves one checkpoint sealed, read on their own (headers are read without them). */
export async function checkpointLeaves(trx: Trx, seq: string): Promise<SealedLeaves> {
  const row = (
    await sql<Pick<CheckpointRow, 'leaf_positions' | 'leaf_hashes'>>`
      select leaf_positions::text[] as leaf_positions, leaf_hashes from ledger_checkpoints where seq = ${seq}::bigint
    `.execute(trx)
  ).rows[0]!
  return leavesOf(row)
}

/** Where the chain stands before the first checkpoint. */
export const CHAIN_START = {
  seq: 0,
  last: null as { tx_id: string; position: string } | null,
  total: 0,
  chainHash: CHAIN_GENESIS,
  checkpointHash: CHECKPOINT_GENESIS_HASH,
}

/** Compares two chain keys (tx_id, then position) as numbers. */
export function compareChainKeys(a: { tx_id: string; position: string }, b: { tx_id: string; position: string }): number {
  const ta = BigInt(a.tx_id)
  const tb = BigInt(b.tx_id)
  if (ta !== tb) return ta < tb ? -1 : 1
  const pa = BigInt(a.position)
  const pb = BigInt(b.position)
  return pa === pb ? 0 : pa < pb ? -1 : 1
}

export type { ChainRow }
