import type { LedgerKeyHandOver, LedgerSigningKey } from '@hookledger/ledger'
import { OpError } from './op-error.js'

/** A ledger key's public half (`hlpk_…`) and its id. */
export interface LedgerPublicKey {
  readonly publicKey: string
  readonly keyId: string
}

/**
 * The ledger keys as this process holds them. The secret one lives only where sealing runs: an
 * API-only process has none, and the ops that sign answer `signing_key_unavailable` there; the
 * ops that only check signatures need the public half, which any process may know.
 */
export interface LedgerKeys {
  /** The key checkpoints are signed with, or null where this process does not seal. */
  signing(): Promise<LedgerSigningKey | null>
  /**
   * The public key with this id, or — with none given — the one the latest checkpoint names
   * (before any checkpoint: the one this process would sign with); null when this process does
   * not know it.
   */
  publicKey(keyId?: string): Promise<LedgerPublicKey | null>
  /** The key hand-overs (rotate-key) verification follows; none for a single key. */
  handOvers(): readonly LedgerKeyHandOver[]
}

/** One key, held: tests and an embedding that seals in-process. */
export function heldLedgerKeys(key: LedgerSigningKey): LedgerKeys {
  const pub: LedgerPublicKey = { publicKey: key.publicKey, keyId: key.keyId }
  return {
    signing: async () => key,
    publicKey: async (keyId) => (keyId === undefined || keyId === key.keyId ? pub : null),
    handOvers: () => [],
  }
}

/** The signing key, or the refusal of a process that holds none. */
export async function requireSigningKey(keys: LedgerKeys): Promise<LedgerSigningKey> {
  const key = await keys.signing()
  if (key === null) {
    throw new OpError('signing_key_unavailable', 'this process does not seal, so it holds no ledger signing key: a worker seals on its own, or run the command where the key lives')
  }
  return key
}

/** The public key (latest checkpoint's, or `keyId`'s), or the refusal of a process that does not know it. */
export async function requirePublicKey(keys: LedgerKeys, keyId?: string): Promise<LedgerPublicKey> {
  const key = await keys.publicKey(keyId)
  if (key === null) {
    throw new OpError(
      'ledger_public_key_unavailable',
      `this process knows no public key for ${keyId === undefined ? "the ledger's latest checkpoint" : `key ${keyId}`}: give it the public key (docs/settings.md, HOOKLEDGER_LEDGER_PUBLIC_KEY)`,
    )
  }
  return key
}
