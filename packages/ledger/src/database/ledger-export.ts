import type { ChainRow } from '../proof/ledger-row-encoding.js'
import type { LedgerCheckpoint } from '../proof/ledger-checkpoint.js'
import { sql } from 'kysely'
import type { Db } from '@hookledger/store'
import { CHAIN_ROW_COLUMNS, CHECKPOINT_HEADER_COLUMNS, chainAfter, checkpointLeaves, checkpointOf, compareChainKeys, type CheckpointHeaderRow } from './ledger-chain-rows.js'
import { cursorRows } from './server-cursor.js'
import { archivedThrough } from './ledger-snapshot-read.js'

/** One line of an export file (JSON lines). */
export type LedgerExportLine =
  | {
      readonly type: 'header'
      readonly format: typeof LEDGER_EXPORT_FORMAT
      readonly from: string | null
      readonly to: string | null
      readonly checkpoints: number
      /** The checkpoints exported, when chosen by seq (an archive): (after, through]. */
      readonly checkpoint_range?: { readonly after: number; readonly through: number }
      /** Checkpoints up to this one lost rows to an archive: they are left out (null: none did). */
      readonly archived_through?: number | null
    }
  | { readonly type: 'anchor'; readonly checkpoint: LedgerCheckpoint }
  | { readonly type: 'checkpoint'; readonly checkpoint: LedgerCheckpoint; readonly leaves: { readonly positions: readonly string[]; readonly hashes: readonly string[] } }
  | { readonly type: 'row'; readonly row: ChainRow }
  /**
   * The last line: the log's signed checkpoint note of the tree the export ends at (the last
   * checkpoint's total), so a file cut short — even at a checkpoint boundary — fails.
   */
  | { readonly type: 'end'; readonly tree_size: number; readonly tree_note: string | null }

/** The export format: v2 ends with a signed `end` line. */
export const LEDGER_EXPORT_FORMAT = 'hookledger.ledger-export.v2'

/**
 * Writes sealed history as JSON lines: the whole checkpoints that seal a row with a position
 * in [from, to] (all of them by default), each followed by its rows in chain order, after the
 * checkpoint just before them (the anchor) when the range does not start at the beginning —
 * everything `ledger verify --file` needs with the public key alone. Streams (a cursor).
 * `checkpoints` chooses by seq instead: those in (after, through], anchored on `after` (an
 * archive). Checkpoints an archive took rows of are never exported from the database: their
 * rows are in the archive's file.
 */
export async function ledgerExport(
  db: Db,
  params: {
    from?: string | undefined
    to?: string | undefined
    checkpoints?: { readonly after: number; readonly through: number }
    onLine: (line: LedgerExportLine) => void | Promise<void>
    onProgress?: (rows: number) => void
  },
): Promise<{ checkpoints: number; rows: number }> {
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      // Headers only (leaves are read per checkpoint as it is written), each with whether it
      // seals a row in [from, to].
      const inRange =
        params.from === undefined && params.to === undefined
          ? sql`true`
          : sql`exists (select 1 from unnest(leaf_positions) p
                        where ${params.from !== undefined ? sql`p >= ${params.from}::bigint` : sql`true`}
                          and ${params.to !== undefined ? sql`p <= ${params.to}::bigint` : sql`true`})`
      const all = (
        await sql<CheckpointHeaderRow & { in_range: boolean }>`
          select ${CHECKPOINT_HEADER_COLUMNS}, ${inRange} as in_range from ledger_checkpoints order by ledger_checkpoints.seq
        `.execute(trx)
      ).rows
      const archived = (await archivedThrough(trx))?.throughCheckpoint ?? 0
      const range = params.checkpoints
      const wanted = (cp: (typeof all)[number]) =>
        Number(cp.seq) > archived && (range ? Number(cp.seq) > range.after && Number(cp.seq) <= range.through : cp.in_range)
      const firstIndex = all.findIndex(wanted)
      const lastIndex = all.length - 1 - [...all].reverse().findIndex(wanted)
      const chosen = firstIndex < 0 ? [] : all.slice(firstIndex, lastIndex + 1)
      await params.onLine({
        type: 'header',
        format: LEDGER_EXPORT_FORMAT,
        from: params.from ?? null,
        to: params.to ?? null,
        checkpoints: chosen.length,
        ...(range ? { checkpoint_range: { after: range.after, through: range.through } } : {}),
        archived_through: archived > 0 ? archived : null,
      })
      if (chosen.length === 0) {
        await params.onLine({ type: 'end', tree_size: 0, tree_note: null })
        return { checkpoints: 0, rows: 0 }
      }
      const anchor = firstIndex > 0 ? checkpointOf(all[firstIndex - 1]!) : null
      if (anchor) await params.onLine({ type: 'anchor', checkpoint: anchor })
      const end = checkpointOf(chosen[chosen.length - 1]!).last
      let rows = 0
      let next = 0
      const query = sql`
        select ${CHAIN_ROW_COLUMNS} from ledger
        where ${chainAfter(anchor?.last ?? null)} and ${end ? sql`(tx_id, position) <= (${end.tx_id}::xid8, ${end.position}::bigint)` : sql`false`}
        order by ledger.tx_id, ledger.position
      `
      const writeCheckpoint = async (cp: CheckpointHeaderRow) => {
        const leaves = await checkpointLeaves(trx, cp.seq)
        await params.onLine({
          type: 'checkpoint',
          checkpoint: checkpointOf(cp),
          leaves: { positions: leaves.positions, hashes: leaves.hashes.map((h) => Buffer.from(h).toString('hex')) },
        })
      }
      const lasts = chosen.map((cp) => checkpointOf(cp).last)
      for await (const row of cursorRows<ChainRow>(trx, 'export_rows', query)) {
        while (next < chosen.length && (next === 0 || afterLast(row, lasts[next - 1]!))) await writeCheckpoint(chosen[next++]!)
        await params.onLine({ type: 'row', row })
        if (++rows % 10_000 === 0) params.onProgress?.(rows)
      }
      while (next < chosen.length) await writeCheckpoint(chosen[next++]!)
      const last = chosen[chosen.length - 1]!
      const note = (await sql<{ tree_note: string | null }>`select tree_note from ledger_checkpoints where seq = ${last.seq}::bigint`.execute(trx)).rows[0]?.tree_note ?? null
      await params.onLine({ type: 'end', tree_size: Number(last.total), tree_note: note })
      return { checkpoints: chosen.length, rows }
    })
}

/** Whether a row lies past a checkpoint's last row (a null last sealed an empty ledger). */
const afterLast = (row: { tx_id: string; position: string }, last: { tx_id: string; position: string } | null) =>
  last === null || compareChainKeys(row, last) > 0
