import { LedgerChainVerifier, type ChainRow, type ChainVerification } from '@hookledger/core'
import { sql } from 'kysely'
import type { Db } from './database.js'
import { cursorRows } from './server-cursor.js'
import { CHAIN_ROW_COLUMNS, CHECKPOINT_COLUMNS, checkpointOf, compareChainKeys, leavesOf, type CheckpointRow } from './ledger-chain-rows.js'

/** Progress of a long verification. */
export interface ChainProgress {
  readonly rows: number
  readonly checkpoints: number
  readonly ms: number
}

/**
 * Recomputes the hash chain and every checkpoint's Merkle root over the database and checks
 * every signature, in one repeatable-read snapshot, streaming (memory holds one checkpoint's
 * worth). Names the first bad position and what is wrong: row changed, missing, inserted,
 * order changed, checkpoint signature bad or checkpoint altered.
 */
export async function ledgerChainVerify(
  db: Db,
  params: { publicKey: Uint8Array; maxProblems?: number; onProgress?: (p: ChainProgress) => void },
): Promise<ChainVerification & { ms: number }> {
  const started = performance.now()
  const verifier = new LedgerChainVerifier({ publicKey: params.publicKey, maxProblems: params.maxProblems ?? 1000 })
  await db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      // Checkpoints are few and small beside the rows (a leaf list each): read them all, then
      // walk the rows, pushing each checkpoint before the rows of its range.
      const checkpoints = (await sql<CheckpointRow>`select ${CHECKPOINT_COLUMNS} from ledger_checkpoints order by ledger_checkpoints.seq`.execute(trx)).rows
      let next = 0
      let rows = 0
      let lastReport = performance.now()
      const lasts = checkpoints.map((cp) => checkpointOf(cp).last)
      // Push checkpoints until the newest pushed one's range holds the row (rows past the last
      // checkpoint are unsealed). A checkpoint whose last is null sealed an empty ledger.
      const pushThrough = (row: ChainRow) => {
        while (next < checkpoints.length) {
          const current = next > 0 ? lasts[next - 1]! : undefined
          if (current !== undefined && (current !== null && compareChainKeys(row, current) <= 0)) break
          verifier.pushCheckpoint(checkpointOf(checkpoints[next]!), leavesOf(checkpoints[next]!))
          next++
        }
      }
      const horizon = sql`tx_id < pg_snapshot_xmin(pg_current_snapshot())`
      for await (const row of cursorRows<ChainRow>(trx, 'chain_rows', sql`select ${CHAIN_ROW_COLUMNS} from ledger where ${horizon} order by ledger.tx_id, ledger.position`)) {
        pushThrough(row)
        verifier.pushRow(row)
        rows++
        if (params.onProgress && performance.now() - lastReport > 500) {
          lastReport = performance.now()
          params.onProgress({ rows, checkpoints: next, ms: Math.round(lastReport - started) })
        }
      }
      // Checkpoints after the last row (count 0, or rows deleted since) still get checked.
      while (next < checkpoints.length) {
        verifier.pushCheckpoint(checkpointOf(checkpoints[next]!), leavesOf(checkpoints[next]!))
        next++
      }
    })
  return { ...verifier.finish(), ms: Math.round(performance.now() - started) }
}
