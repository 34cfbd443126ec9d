import { inclusionProof } from '../proof/merkle-tree.js'
import { LEDGER_RECEIPT_FORMAT, type LedgerReceipt, type LedgerReceiptEntry } from '../proof/ledger-receipt.js'
import { type ChainRow } from '../proof/ledger-row-encoding.js'
import { type LedgerCheckpoint } from '../proof/ledger-checkpoint.js'
import { sql } from 'kysely'
import type { Db } from '@hookledger/store'
import { CHAIN_ROW_COLUMNS, CHECKPOINT_COLUMNS, checkpointOf, leavesOf, type CheckpointRow } from './ledger-chain-rows.js'

/**
 * A delivery's receipt: every ledger entry about it, each sealed one with an RFC 6962 inclusion
 * proof into the Merkle tree of the signed checkpoint that sealed it (O(log n) hashes), so
 * anyone with the ledger's public key can check it offline. Null when the owner has no such
 * delivery (another owner's answers the same as a missing one).
 */
export async function ledgerReceipt(db: Db, params: { owner_id: string; delivery_id: string }): Promise<LedgerReceipt | null> {
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      const rows = (
        await sql<ChainRow>`
          select ${CHAIN_ROW_COLUMNS} from ledger
          where delivery_id = ${params.delivery_id}::uuid and owner_id = ${params.owner_id}
          order by ledger.tx_id, ledger.position
        `.execute(trx)
      ).rows
      if (rows.length === 0) return null
      const entries: LedgerReceiptEntry[] = []
      const unsealed: ChainRow[] = []
      const checkpoints = new Map<number, { checkpoint: LedgerCheckpoint; leaves: Uint8Array[]; index: Map<string, number> }>()
      for (const row of rows) {
        // The checkpoint that sealed a row is the first whose last row is at or after it.
        const found = (
          await sql<CheckpointRow>`
            select ${CHECKPOINT_COLUMNS} from ledger_checkpoints
            where (last_tx_id, last_position) >= (${row.tx_id}::xid8, ${row.position}::bigint)
            order by ledger_checkpoints.last_tx_id, ledger_checkpoints.last_position, ledger_checkpoints.seq limit 1
          `.execute(trx)
        ).rows[0]
        if (!found) {
          unsealed.push(row)
          continue
        }
        const seq = Number(found.seq)
        let sealed = checkpoints.get(seq)
        if (!sealed) {
          const leaves = leavesOf(found)
          sealed = {
            checkpoint: checkpointOf(found),
            leaves: [...leaves.hashes],
            index: new Map(leaves.positions.map((p, i) => [p, i])),
          }
          checkpoints.set(seq, sealed)
        }
        const leafIndex = sealed.index.get(row.position)
        if (leafIndex === undefined) {
          // Not in the checkpoint that should hold it: the receipt says so rather than prove it.
          unsealed.push(row)
          continue
        }
        entries.push({
          row,
          checkpoint_seq: seq,
          leaf_index: leafIndex,
          tree_size: sealed.leaves.length,
          proof: inclusionProof(sealed.leaves, leafIndex).map((h) => Buffer.from(h).toString('hex')),
        })
      }
      return {
        format: LEDGER_RECEIPT_FORMAT,
        delivery_id: params.delivery_id,
        entries,
        checkpoints: [...checkpoints.values()].map((c) => c.checkpoint).sort((a, b) => a.seq - b.seq),
        unsealed,
      }
    })
}
