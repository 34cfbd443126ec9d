/**
 * `ledger verify` over the database, whoever asks (the CLI, the `ledger.verify` operation): the
 * chain pass, then the replay — both from the latest snapshot, or with `full` every row left
 * and the replay from the first entry while no history is archived — and one verdict.
 */
import type { LedgerKeyHandOver } from '../proof/ledger-key-rotation.js'
import { ledgerChainVerify, type ChainProgress } from './ledger-chain-verify.js'
import type { Db } from '@hookledger/store'
import { ledgerReplayVerify, type ReplayReport } from './ledger-replay.js'
import { archivedThrough } from './ledger-snapshot-read.js'

export async function ledgerVerify(
  db: Db,
  params: { publicKey: Uint8Array; handOvers?: readonly LedgerKeyHandOver[]; full?: boolean; chainOnly?: boolean; onProgress?: (p: ChainProgress) => void },
): Promise<{ ok: boolean; chain: Awaited<ReturnType<typeof ledgerChainVerify>>; replay: ReplayReport | null }> {
  const from = params.full ? 'genesis' : 'snapshot'
  const chain = await ledgerChainVerify(db, { publicKey: params.publicKey, from, ...(params.handOvers ? { handOvers: params.handOvers } : {}), ...(params.onProgress ? { onProgress: params.onProgress } : {}) })
  const replayFrom = from === 'genesis' && (await archivedThrough(db)) === null ? 'genesis' : 'snapshot'
  const replay = params.chainOnly ? null : await ledgerReplayVerify(db, { from: replayFrom })
  const ok = chain.ok && (replay?.differencesTotal ?? 0) === 0 && (replay?.snapshot?.digestMatches ?? true)
  return { ok, chain, replay }
}
