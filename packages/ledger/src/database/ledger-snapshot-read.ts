/**
 * Reading what snapshots and archives left behind: the latest signed projection snapshot and
 * its rows, and how far the ledger's history was archived (its `ledger.retention` entries).
 * Replay, `ledger verify`, export and archive all start from these.
 */
import type { CheckpointSnapshot } from '../proof/ledger-checkpoint.js'
import { sql, type RawBuilder } from 'kysely'
import type { Db, Trx } from '@hookledger/store'

/** A snapshot and the checkpoint that signed it. */
export interface SignedSnapshot {
  readonly descriptor: CheckpointSnapshot
  readonly checkpointSeq: number
}

/** The newest snapshot a checkpoint signed, or null. */
export async function latestSignedSnapshot(q: Db | Trx): Promise<SignedSnapshot | null> {
  const row = (
    await sql<{ seq: string; snapshot: CheckpointSnapshot }>`
      select seq::text, snapshot from ledger_checkpoints
      where snapshot is not null
      order by (snapshot ->> 'seq')::bigint desc limit 1
    `.execute(q)
  ).rows[0]
  return row ? { descriptor: row.snapshot, checkpointSeq: Number(row.seq) } : null
}

const ENTITY = { endpoints: 'endpoint', deliveries: 'delivery' } as const

/**
 * A snapshot's rows of one table in id order, each as the row it populates (the types the
 * live table's reads give: what the evolve functions fold over) beside the stored JSON
 * (`snapshot_row`, what its digest covers).
 */
export function snapshotStartRows(seq: number, table: 'endpoints' | 'deliveries'): RawBuilder<unknown> {
  // Chunks in order, rows in order within each (an incremental sort on the element number).
  return sql`
    select e.value as snapshot_row, p.*
    from ledger_snapshot_rows s
    cross join lateral jsonb_array_elements(s.rows) with ordinality as e(value, n)
    cross join lateral jsonb_populate_record(null::${sql.table(table)}, e.value) p
    where s.snapshot_seq = ${seq}::bigint and s.entity = ${ENTITY[table]}
    order by s.chunk, e.n
  `
}

/** How far history has left the ledger: the archive's last checkpoint, and below which position partitions were dropped. */
export interface ArchivedHistory {
  readonly throughCheckpoint: number
  readonly beforePosition: string
}

/**
 * The newest sealed `ledger.retention` entry that dropped partitions: checkpoints up to
 * `throughCheckpoint` may have lost rows, so verification resumes after it. Only a sealed
 * entry counts — one appended after the last checkpoint (or forged there) excuses nothing.
 */
export async function archivedThrough(q: Db | Trx): Promise<ArchivedHistory | null> {
  const row = (
    await sql<{ through: string; before: string }>`
      select (l.payload ->> 'through_checkpoint') as through, (l.payload ->> 'before_position') as before
      from ledger l, (select last_tx_id, last_position from ledger_checkpoints order by seq desc limit 1) c
      where l.kind = 'ledger.retention' and l.payload ? 'through_checkpoint'
        and (l.payload ->> 'partitions')::int > 0
        and (l.tx_id, l.position) <= (c.last_tx_id, c.last_position)
      order by (l.payload ->> 'through_checkpoint')::bigint desc limit 1
    `.execute(q)
  ).rows[0]
  return row ? { throughCheckpoint: Number(row.through), beforePosition: row.before } : null
}

/** The last checkpoint any archive wrote to a file (whether or not a partition could go), or 0. */
export async function archivedCheckpoint(q: Db | Trx): Promise<number> {
  const row = (
    await sql<{ through: string | null }>`
      select max((payload ->> 'through_checkpoint')::bigint)::text as through
      from ledger where kind = 'ledger.retention' and payload ? 'through_checkpoint'
    `.execute(q)
  ).rows[0]
  return Number(row?.through ?? 0)
}
