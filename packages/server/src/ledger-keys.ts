import { parseLedgerPublicKey, ledgerKeyId, type LedgerSigningKey } from '@hookledger/ledger'
import { OpError, type LedgerKeys, type LedgerPublicKey } from '@hookledger/ops'
import type { Db } from '@hookledger/store'
import type { Config } from './config.js'
import { loadLedgerSigningKey, readLedgerPublicKeyFile, readLedgerSigningKeyFile } from './key-files.js'
import { lastCheckpointKeyId } from './last-checkpoint-key-id.js'
import { readLedgerKeyRotations, trustedLedgerKeyRotations } from './ledger-key-rotations-file.js'
import { StartupError } from './startup-error.js'

/**
 * Where a process's signing key comes from. `none`: a process that does not seal (`serve --role
 * api`) — it never reads the key's file or setting. `held`: loaded and checked against the
 * ledger at start (a worker). `on-demand`: a CLI `op` or `mcp`, which loads and checks it the
 * first time an operation signs, so reading endpoints never needs it.
 */
export type SigningKeySource = { readonly kind: 'none' } | { readonly kind: 'held'; readonly key: LedgerSigningKey } | { readonly kind: 'on-demand' }

/**
 * The signing key of a process that seals, checked against the ledger: the last checkpoint's
 * key id and the hand-overs beside the key (loadLedgerSigningKey refuses, in one line, what
 * would sign checkpoints that no longer verify).
 */
export async function sealingLedgerKey(config: Config, db: Db): Promise<LedgerSigningKey> {
  const handOvers = trustedLedgerKeyRotations(config)
  return loadLedgerSigningKey(config, { lastCheckpointKeyId: await lastCheckpointKeyId(db), handOvers })
}

const publicOf = (publicKey: string): LedgerPublicKey => ({ publicKey, keyId: ledgerKeyId(parseLedgerPublicKey(publicKey)) })
const encodePublicKey = (raw: Uint8Array) => `hlpk_${Buffer.from(raw).toString('base64url')}`

/**
 * The public half of the key this data dir signs with now, never making one: the secret's
 * (setting, then file) when `secret` allows reading it, else HOOKLEDGER_LEDGER_PUBLIC_KEY, the
 * public-key file, or the newest hand-over's successor.
 */
export function ownLedgerPublicKey(config: Config, options: { secret: boolean }): LedgerPublicKey | null {
  if (options.secret) {
    const key = config.HOOKLEDGER_LEDGER_SIGNING_KEY ?? readLedgerSigningKeyFile(config)
    if (key) return { publicKey: key.publicKey, keyId: key.keyId }
  }
  const text = config.HOOKLEDGER_LEDGER_PUBLIC_KEY ?? readLedgerPublicKeyFile(config)
  if (text) return publicOf(text)
  const newest = readLedgerKeyRotations(config).handOvers.at(-1)
  return newest ? { publicKey: encodePublicKey(newest.toPublicKey), keyId: newest.to } : null
}

/** Every public key this process knows, by key id: its own, the setting's, the file's, and both ends of each hand-over. */
function knownPublicKeys(config: Config, own: LedgerPublicKey | null): Map<string, LedgerPublicKey> {
  const known = new Map<string, LedgerPublicKey>()
  const add = (key: LedgerPublicKey | null) => key && !known.has(key.keyId) && known.set(key.keyId, key)
  add(own)
  if (config.HOOKLEDGER_LEDGER_PUBLIC_KEY) add(publicOf(config.HOOKLEDGER_LEDGER_PUBLIC_KEY))
  const file = readLedgerPublicKeyFile(config)
  if (file) add(publicOf(file))
  for (const h of readLedgerKeyRotations(config).handOvers) {
    add({ publicKey: encodePublicKey(h.fromPublicKey), keyId: h.from })
    add({ publicKey: encodePublicKey(h.toPublicKey), keyId: h.to })
  }
  return known
}

/** The ledger keys of a process, for its operations (ops' LedgerKeys). Files are read when asked: a rotation may add a key. */
export function createLedgerKeys(config: Config, db: Db, source: SigningKeySource): LedgerKeys {
  let loaded: LedgerSigningKey | null = source.kind === 'held' ? source.key : null
  const own = (): LedgerPublicKey | null =>
    loaded ? { publicKey: loaded.publicKey, keyId: loaded.keyId } : ownLedgerPublicKey(config, { secret: source.kind === 'on-demand' })
  return {
    async signing() {
      if (loaded || source.kind !== 'on-demand') return loaded
      try {
        loaded = await sealingLedgerKey(config, db)
      } catch (err) {
        // The op answers the refusal as its code; the line says what to fix.
        if (err instanceof StartupError) throw new OpError('signing_key_unavailable', err.message)
        throw err
      }
      return loaded
    },
    async publicKey(keyId) {
      const id = keyId ?? (await lastCheckpointKeyId(db))
      const mine = own()
      if (id === null) return mine
      return knownPublicKeys(config, mine).get(id) ?? null
    },
    handOvers: () => readLedgerKeyRotations(config).handOvers,
  }
}
