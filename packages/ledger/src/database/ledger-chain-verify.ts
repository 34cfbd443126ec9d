import { LedgerChainVerifier, type ChainVerification } from '../proof/ledger-chain-verifier.js'
import { ledgerTrustAnchor, type LedgerKeyHandOver } from '../proof/ledger-key-rotation.js'
import { type ChainRow } from '../proof/ledger-row-encoding.js'
import { sql } from 'kysely'
import type { Db, Trx } from '@hookledger/store'
import { cursorRows } from './server-cursor.js'
import {
  CHAIN_ROW_COLUMNS,
  CHECKPOINT_HEADER_COLUMNS,
  chainAfter,
  checkpointOf,
  compareChainKeys,
  checkpointLeaves,
  type CheckpointHeaderRow,
} from './ledger-chain-rows.js'
import { archivedThrough, latestSignedSnapshot } from './ledger-snapshot-read.js'

/** Progress of a long verification. */
export interface ChainProgress {
  readonly rows: number
  readonly checkpoints: number
  readonly ms: number
}

/** Where a verification read rows from. */
export interface ChainVerifyStart {
  /** The checkpoint the rows resume after (checked by its signature and links only, like every one before it); null: from the first row. */
  readonly afterCheckpoint: number | null
  /** Why: `archive` (the rows before it left the ledger), `snapshot` (the projections start from a signed snapshot), or `genesis`. */
  readonly reason: 'genesis' | 'archive' | 'snapshot'
}

/**
 * Recomputes the hash chain and every checkpoint's Merkle root over the database and checks
 * every signature, in one repeatable-read snapshot, streaming (memory holds one checkpoint's
 * worth). Names the first bad position and what is wrong: row changed, missing, inserted,
 * order changed, checkpoint signature bad or checkpoint altered.
 *
 * Every checkpoint's signature and links are checked. Rows are read from the beginning, or —
 * `from: 'snapshot'` (the default) — after the last checkpoint all of whose rows precede the
 * latest signed snapshot's horizon: every row at or after the snapshot's position lies past
 * it, so the rows the replay folds are all re-verified, and the cost follows what was
 * appended since. Either way rows an archive took (`ledger.retention`) are not expected.
 */
export async function ledgerChainVerify(
  db: Db,
  params: { publicKey: Uint8Array; handOvers?: readonly LedgerKeyHandOver[]; maxProblems?: number; onProgress?: (p: ChainProgress) => void; from?: 'snapshot' | 'genesis' },
): Promise<ChainVerification & { ms: number; start: ChainVerifyStart }> {
  const started = performance.now()
  // The anchor is the ledger's first key, reached back from the one trusted over its hand-overs.
  const handOvers = params.handOvers ?? []
  const verifier = new LedgerChainVerifier({ publicKey: ledgerTrustAnchor(params.publicKey, handOvers), handOvers, maxProblems: params.maxProblems ?? 1000 })
  let forged: { position: string; kind: string; tx_id: string }[] = []
  const start = await db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      // Checkpoint headers are small: read them all; leaves are read per checkpoint as its rows come.
      const headers = (await sql<CheckpointHeaderRow>`select ${CHECKPOINT_HEADER_COLUMNS} from ledger_checkpoints order by ledger_checkpoints.seq`.execute(trx)).rows
      const start = await startingPoint(trx, headers, params.from ?? 'snapshot')
      const resumeAt = start.afterCheckpoint === null ? 0 : headers.findIndex((h) => Number(h.seq) > start.afterCheckpoint!)
      const firstFull = resumeAt === -1 ? headers.length : resumeAt
      for (const header of headers.slice(0, firstFull)) verifier.pushHeader(checkpointOf(header))
      const anchorLast = firstFull > 0 ? checkpointOf(headers[firstFull - 1]!).last : null

      let next = firstFull
      let rows = 0
      let lastReport = performance.now()
      const lasts = headers.map((cp) => checkpointOf(cp).last)
      const pushNext = async () => {
        const header = headers[next]!
        verifier.pushCheckpoint(checkpointOf(header), await checkpointLeaves(trx, header.seq))
        next++
      }
      // Push checkpoints until the newest pushed one's range holds the row (rows past the last
      // checkpoint are unsealed). A checkpoint whose last is null sealed an empty ledger.
      const pushThrough = async (row: ChainRow) => {
        while (next < headers.length) {
          const current = next > firstFull ? lasts[next - 1]! : undefined
          if (current !== undefined && current !== null && compareChainKeys(row, current) <= 0) break
          await pushNext()
        }
      }
      const horizon = sql`tx_id < pg_snapshot_xmin(pg_current_snapshot())`
      for await (const row of cursorRows<ChainRow>(trx, 'chain_rows', sql`select ${CHAIN_ROW_COLUMNS} from ledger where ${chainAfter(anchorLast)} and ${horizon} order by ledger.tx_id, ledger.position`)) {
        await pushThrough(row)
        verifier.pushRow(row)
        rows++
        if (params.onProgress && performance.now() - lastReport > 500) {
          lastReport = performance.now()
          params.onProgress({ rows, checkpoints: next, ms: Math.round(lastReport - started) })
        }
      }
      // Checkpoints after the last row (count 0, or rows deleted since) still get checked.
      while (next < headers.length) await pushNext()
      // Every real transaction id is below this snapshot's xmax: a row above it was written with
      // a tx_id of someone's choosing, never to be sealed (and shown as history all the same).
      forged = (
        await sql<{ position: string; kind: string; tx_id: string }>`
          select position::text, kind, tx_id::text from ledger where tx_id >= pg_snapshot_xmax(pg_current_snapshot()) order by position limit 100
        `.execute(trx)
      ).rows
      return start
    })
  const verdict = verifier.finish()
  if (forged.length === 0) return { ...verdict, ms: Math.round(performance.now() - started), start }
  const problems = [
    ...verdict.problems,
    ...forged.map((r) => ({ kind: 'tx_id_forged' as const, position: r.position, checkpoint: null, detail: `${r.kind} at position ${r.position} carries tx_id ${r.tx_id}, which no transaction has had` })),
  ]
  const lowest = forged.map((r) => BigInt(r.position)).reduce((a, b) => (a < b ? a : b))
  const firstBadPosition = verdict.firstBadPosition === null || lowest < BigInt(verdict.firstBadPosition) ? lowest.toString() : verdict.firstBadPosition
  return { ...verdict, ok: false, problems, firstBadPosition, ms: Math.round(performance.now() - started), start }
}

/** After which checkpoint the rows are read, and why (see ledgerChainVerify). */
async function startingPoint(trx: Trx, headers: readonly CheckpointHeaderRow[], from: 'snapshot' | 'genesis'): Promise<ChainVerifyStart> {
  const archived = await archivedThrough(trx)
  let start: ChainVerifyStart = archived ? { afterCheckpoint: archived.throughCheckpoint, reason: 'archive' } : { afterCheckpoint: null, reason: 'genesis' }
  if (from === 'genesis') return start
  const snapshot = await latestSignedSnapshot(trx)
  if (snapshot === null) return start
  const horizon = BigInt(snapshot.descriptor.horizon)
  let anchor: number | null = null
  for (const h of headers) {
    if (h.last_tx_id === null || BigInt(h.last_tx_id) >= horizon) break
    anchor = Number(h.seq)
  }
  if (anchor !== null && (start.afterCheckpoint === null || anchor > start.afterCheckpoint)) start = { afterCheckpoint: anchor, reason: 'snapshot' }
  return start
}
