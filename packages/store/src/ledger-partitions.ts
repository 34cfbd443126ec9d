/**
 * The ledger's range partitions (migration 0011): listed, created ahead of the writers, and
 * dropped — whole and sealed — through the audited retention function. The SQL functions hold
 * the rules; this is how the processes call them.
 */
import { sql } from 'kysely'
import type { Db } from './database.js'

/** Positions per ledger partition (≈ 250,000 deliveries at four rows each). */
export const LEDGER_PARTITION_ROWS = 1_000_000

/** How many partitions are kept ready past the next position to be drawn. */
export const LEDGER_PARTITIONS_AHEAD = 2

/** One partition: [from, to) in positions (null: unbounded), or the default partition. */
export interface LedgerPartition {
  readonly name: string
  readonly from: string | null
  readonly to: string | null
  readonly isDefault: boolean
}

export async function ledgerPartitions(db: Db): Promise<LedgerPartition[]> {
  const rows = (
    await sql<{ name: string; from_position: string | null; to_position: string | null; is_default: boolean }>`
      select name, from_position::text, to_position::text, is_default from ledger_partitions
      order by is_default, ledger_partitions.to_position
    `.execute(db)
  ).rows
  return rows.map((r) => ({ name: r.name, from: r.from_position, to: r.to_position, isDefault: r.is_default }))
}

/** Creates partitions until `ahead` of them lie past the next position; returns how many it made. */
export async function ledgerPartitionsAhead(
  db: Db,
  params: { rowsPerPartition?: number; ahead?: number } = {},
): Promise<number> {
  const rows = params.rowsPerPartition ?? LEDGER_PARTITION_ROWS
  const ahead = params.ahead ?? LEDGER_PARTITIONS_AHEAD
  const r = await sql<{ created: number }>`select hookledger_ledger_partitions_ahead(${rows}::bigint, ${ahead}::integer) as created`.execute(db)
  return r.rows[0]!.created
}

/**
 * Drops every partition entirely below `beforePosition` (each must be sealed) and appends one
 * `ledger.retention` entry; returns the rows dropped.
 */
export async function ledgerRetention(db: Db, params: { beforePosition: string; actor: string; now: Date }): Promise<number> {
  const r = await sql<{ dropped: string }>`
    select hookledger_ledger_retention(${params.beforePosition}::bigint, ${params.actor}, ${params.now})::text as dropped
  `.execute(db)
  return Number(r.rows[0]!.dropped)
}
