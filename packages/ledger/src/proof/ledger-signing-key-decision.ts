import { keyIdsHandedOverFrom, type LedgerKeyHandOver } from './ledger-key-rotation.js'

/**
 * What a process that seals does with the signing key it found (or did not), given the
 * ledger's checkpoints: a key made anew once a checkpoint exists, or one the checkpoints do not
 * lead to, would sign checkpoints that no longer verify under the key that signed the earlier
 * ones — and checkpoints are append-only, so that could never be repaired.
 */
export type LedgerSigningKeyDecision =
  | { readonly action: 'use' }
  /** No key and no checkpoint: the first sealing process makes the key, once. */
  | { readonly action: 'generate' }
  | {
      readonly action: 'refuse'
      /**
       * missing: no key, but a checkpoint exists; mismatch: the key is not the one the last
       * checkpoint names nor one it handed over to; retired: the key handed over to another.
       */
      readonly reason: 'missing' | 'mismatch' | 'retired'
      /** The key ids a sealer may hold now (the last checkpoint's key, or its successors). */
      readonly expectedKeyIds: readonly string[]
    }

export interface LedgerSigningKeyFacts {
  /** Id of the key this process found (a file or a setting); null: none. */
  readonly keyId: string | null
  /** key_id of the checkpoint with the highest seq; null: no checkpoint yet. */
  readonly lastCheckpointKeyId: string | null
  /** Verified hand-overs (ledger-key-rotation.ts). */
  readonly handOvers: readonly Pick<LedgerKeyHandOver, 'from' | 'to'>[]
}

export function decideLedgerSigningKey(facts: LedgerSigningKeyFacts): LedgerSigningKeyDecision {
  const { keyId, lastCheckpointKeyId, handOvers } = facts
  const base = lastCheckpointKeyId ?? keyId
  if (base === null) return { action: 'generate' }
  const { reached, retired } = keyIdsHandedOverFrom(base, handOvers)
  const expectedKeyIds = [...reached].filter((id) => !retired.has(id))
  if (keyId === null) return { action: 'refuse', reason: 'missing', expectedKeyIds }
  if (!reached.has(keyId)) return { action: 'refuse', reason: 'mismatch', expectedKeyIds }
  if (retired.has(keyId)) return { action: 'refuse', reason: 'retired', expectedKeyIds }
  return { action: 'use' }
}
