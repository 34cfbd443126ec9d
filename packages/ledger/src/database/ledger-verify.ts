/**
 * `ledger verify` over the database, whoever asks (the CLI, the `ledger.verify` operation): the
 * chain pass, then the replay — both from the latest snapshot, or with `full` every row left
 * and the replay from the first entry while no history is archived — the tree pass (the log's
 * notes, tiles and rows agree, and a saved checkpoint is a prefix), and one verdict.
 */
import type { LedgerKeyHandOver } from '../proof/ledger-key-rotation.js'
import { ledgerChainVerify, type ChainProgress } from './ledger-chain-verify.js'
import type { Db } from '@hookledger/store'
import { ledgerReplayVerify, type ReplayReport } from './ledger-replay.js'
import { archivedThrough } from './ledger-snapshot-read.js'
import { ledgerTreeVerify, type TreeVerifyReport } from './ledger-tree-verify.js'

export async function ledgerVerify(
  db: Db,
  params: {
    publicKey: Uint8Array
    handOvers?: readonly LedgerKeyHandOver[]
    full?: boolean
    chainOnly?: boolean
    /** A checkpoint note saved earlier (or cosigned by a witness): the tree must extend it. */
    since?: string | undefined
    onProgress?: (p: ChainProgress) => void
  },
): Promise<{ ok: boolean; chain: Awaited<ReturnType<typeof ledgerChainVerify>>; tree: TreeVerifyReport; replay: ReplayReport | null }> {
  const from = params.full ? 'genesis' : 'snapshot'
  const chain = await ledgerChainVerify(db, { publicKey: params.publicKey, from, ...(params.handOvers ? { handOvers: params.handOvers } : {}), ...(params.onProgress ? { onProgress: params.onProgress } : {}) })
  const tree = await ledgerTreeVerify(db, { publicKey: params.publicKey, ...(params.handOvers ? { handOvers: params.handOvers } : {}), since: params.since, full: params.full === true })
  const replayFrom = from === 'genesis' && (await archivedThrough(db)) === null ? 'genesis' : 'snapshot'
  const replay = params.chainOnly ? null : await ledgerReplayVerify(db, { from: replayFrom })
  const ok = chain.ok && tree.ok && (replay?.differencesTotal ?? 0) === 0 && (replay?.snapshot?.digestMatches ?? true)
  return { ok, chain, tree, replay }
}
