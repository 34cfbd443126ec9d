/**
 * The ledger's range partitions (the baseline migration): listed, created ahead of the writers, and
 * dropped — whole and sealed — through the audited retention function. The SQL functions hold
 * the rules; this is how the processes call them.
 */
import type { ArchiveDescription } from '@hookledger/core'
import { sql } from 'kysely'
import type { Db } from '@hookledger/store'

/**
 * Positions per ledger partition: ≈ 11.6M deliveries at 4.3 rows each (~65 min at 3,000
 * deliveries/s, ~13 days at 10/s), ≈ 19 GB on disk. A partition is the unit of retention (an
 * archive drops whole ones), and every read not bounded by position plans and probes each one,
 * so their number must stay in the tens to low hundreds (db/migrations/0001_baseline.sql says
 * why this size).
 */
export const LEDGER_PARTITION_ROWS = 50_000_000

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
 * The audited retention function: drops every partition below `beforePosition` (null: none),
 * each holding only rows sealed by checkpoints up to `throughCheckpoint` (the archive's), and
 * appends one `ledger.retention` entry describing the archive; returns the rows dropped.
 */
export async function ledgerRetention(
  db: Db,
  params: { throughCheckpoint: number; beforePosition: string | null; archive: ArchiveDescription | null; actor: string; now: Date },
): Promise<number> {
  const r = await sql<{ dropped: string }>`
    select hookledger_ledger_retention(${params.throughCheckpoint}::bigint, ${params.beforePosition}::bigint,
      ${params.archive ? JSON.stringify(params.archive) : null}::jsonb, ${params.actor}, ${params.now})::text as dropped
  `.execute(db)
  return Number(r.rows[0]!.dropped)
}

/**
 * The end of the lowest run of partitions, all below `belowPosition`, whose rows checkpoints up
 * to `last` sealed (each checked on its own chain-order index): what an archive through that
 * checkpoint may drop. Null when not even the lowest qualifies.
 */
export async function ledgerPartitionsSealedThrough(
  db: Db,
  params: { last: { tx_id: string; position: string } | null; belowPosition: string },
): Promise<{ beforePosition: string | null; partitions: number }> {
  let beforePosition: string | null = null
  let partitions = 0
  for (const p of await ledgerPartitions(db)) {
    if (p.isDefault || p.to === null || BigInt(p.to) > BigInt(params.belowPosition)) break
    const later = params.last
      ? sql`(tx_id, position) > (${params.last.tx_id}::xid8, ${params.last.position}::bigint)`
      : sql`true`
    const { rows } = await sql`select 1 from ${sql.table(p.name)} where ${later} limit 1`.execute(db)
    if (rows.length > 0) break
    beforePosition = p.to
    partitions++
  }
  return { beforePosition, partitions }
}
