import { LEDGER_RECEIPT_FORMAT, type LedgerReceipt, type LedgerReceiptEntry } from '../proof/ledger-receipt.js'
import { ledgerRowBytes, type ChainRow } from '../proof/ledger-row-encoding.js'
import { formatTlogProof, parseCheckpointBody } from '../log/index.js'
import { inclusionProofFromTiles } from '../tree/index.js'
import { noteText } from '../proof/ledger-tree-note.js'
import { sql } from 'kysely'
import type { Db, Trx } from '@hookledger/store'
import { CHAIN_ROW_COLUMNS } from './ledger-chain-rows.js'
import { enqueuingDecisionRows } from './ledger-enqueuing-decision.js'
import { comparePositions } from './merged-cursor.js'
import { databaseTileReader, latestTreeNote } from './ledger-tree.js'
import { servedCheckpoint } from './ledger-cosignatures.js'
import type { TlogPolicy } from '../log/index.js'

/**
 * A delivery's receipt: every ledger row about it, each sealed one as a `tlog-proof` into the
 * checkpoint the log serves (the newest, or with a policy the newest its witnesses cosigned; its leaf index is its sealed ordinal; the proof comes from the
 * tiles, O(log n) hashes). Rows past the newest checkpoint are `unsealed`; a row inside the
 * sealed range that no checkpoint sealed is `unprovable` — never passed off as merely late.
 * `owner_id` scopes it to one owner (another owner's delivery answers the same as a missing
 * one); without it (the operator's CLI) any owner's. Null when there is no such delivery.
 */
export async function ledgerReceipt(db: Db, params: { owner_id?: string; delivery_id: string; policy?: TlogPolicy | null }): Promise<LedgerReceipt | null> {
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      const owner = params.owner_id !== undefined ? sql`and owner_id = ${params.owner_id}` : sql``
      // The rows that name it, and the fan-out decision that enqueued it (ledger format 3).
      const rows = (
        await sql<ChainRow>`
          select ${CHAIN_ROW_COLUMNS} from ledger
          where delivery_id = ${params.delivery_id}::uuid ${owner}
          union all
          ${enqueuingDecisionRows(CHAIN_ROW_COLUMNS, params.delivery_id, owner)}
        `.execute(trx)
      ).rows.sort(byChainOrder)
      if (rows.length === 0) return null
      const newest = await latestTreeNote(trx)
      // Proofs go into the checkpoint the log serves: with a policy, the newest one its witnesses cosigned.
      const head = await servedCheckpoint(trx, params.policy ?? null)
      const sealedThrough = newest
        ? (await sql<{ last_tx_id: string | null; last_position: string | null }>`
            select last_tx_id::text, last_position::text from ledger_checkpoints where seq = ${newest!.seq}::bigint
          `.execute(trx)).rows[0]!
        : null
      const places = await leafIndexesOf(trx, rows)
      const entries: LedgerReceiptEntry[] = []
      const unsealed: ChainRow[] = []
      const unprovable: ChainRow[] = []
      const reader = databaseTileReader(trx)
      for (const row of rows) {
        const index = places.get(row.position)
        if (head && index !== undefined && index < head.size) {
          const proof = await inclusionProofFromTiles(index, head.size, reader)
          entries.push({ row, leaf_index: index, tlog_proof: formatTlogProof({ extra: ledgerRowBytes(row), index, proof, checkpoint: head.note }) })
        } else if (sealedThrough?.last_tx_id != null && chainAtOrBefore(row, { tx_id: sealedThrough.last_tx_id, position: sealedThrough.last_position! })) {
          unprovable.push(row)
        } else {
          unsealed.push(row)
        }
      }
      return {
        format: LEDGER_RECEIPT_FORMAT,
        delivery_id: params.delivery_id,
        origin: head ? parseCheckpointBody(noteText(head.note)).origin : null,
        tree_size: head?.size ?? 0,
        entries,
        unsealed,
        unprovable,
      }
    })
}

/** Each sealed row's leaf index: its checkpoint's first ordinal plus its place among the checkpoint's positions. */
async function leafIndexesOf(trx: Trx, rows: readonly ChainRow[]): Promise<Map<string, number>> {
  const found = (
    await sql<{ position: string; leaf_index: string }>`
      select r.position::text as position, (c.total - c.count + k.ord - 1)::text as leaf_index
      from unnest(${rows.map((r) => r.position)}::bigint[], ${rows.map((r) => r.tx_id)}::xid8[]) as r(position, tx_id)
      cross join lateral (
        select total, count, leaf_positions from ledger_checkpoints
        where (last_tx_id, last_position) >= (r.tx_id, r.position)
        order by last_tx_id, last_position, seq limit 1
      ) c
      cross join lateral (select ord from unnest(c.leaf_positions) with ordinality as p(position, ord) where p.position = r.position) k
    `.execute(trx)
  ).rows
  return new Map(found.map((f) => [f.position, Number(f.leaf_index)]))
}

/** Chain order, (tx_id, position): the columns come as decimal text. */
function byChainOrder(a: ChainRow, b: ChainRow): number {
  return comparePositions(a.tx_id, b.tx_id) || comparePositions(a.position, b.position)
}

function chainAtOrBefore(row: ChainRow, last: { tx_id: string; position: string }): boolean {
  const a = BigInt(row.tx_id)
  const b = BigInt(last.tx_id)
  return a < b || (a === b && BigInt(row.position) <= BigInt(last.position))
}
