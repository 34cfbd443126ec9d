/**
 * What a chain verification reports, in a file of its own: the verifier and the checkpoint
 * segment both speak it, and neither imports the other for it.
 */

/** What a verification can find wrong. */
export type ChainProblemKind =
  | 'row_changed'
  | 'row_missing'
  | 'row_inserted'
  | 'order_changed'
  | 'checkpoint_signature_bad'
  | 'checkpoint_altered'
  | 'checkpoint_sequence_broken'
  | 'chain_mismatch'
  /** A row whose tx_id no transaction has had yet: written with a chosen tx_id, so the sealer would never reach it. */
  | 'tx_id_forged'

/** One finding; `position` names the row, `checkpoint` the seq whose range it is in. */
export interface ChainProblem {
  readonly kind: ChainProblemKind
  readonly position: string | null
  readonly checkpoint: number | null
  readonly detail: string
}

/** Per checkpoint, in chain order: what the sealer recorded. */
export interface SealedLeaves {
  readonly positions: readonly string[]
  readonly hashes: readonly Uint8Array[]
}
