import path from 'node:path'
import { generateLedgerSigningKey, parseLedgerSigningKey, signKeyRotation } from '@hookledger/ledger'
import { type Clock } from '@hookledger/core'
import type { LedgerKeyRotated } from '@hookledger/cli'
import type { Db } from '@hookledger/store'
import type { Config } from './config.js'
import {
  LEDGER_SIGNING_KEY_FILE,
  loadLedgerSigningKey,
  promoteStagedLedgerSigningKey,
  readLedgerSigningKeyFile,
  readStagedLedgerSigningKey,
  stageLedgerSigningKey,
} from './key-files.js'
import { lastCheckpointKeyId } from './last-checkpoint-key-id.js'
import { appendLedgerKeyRotation, LEDGER_KEY_ROTATIONS_FILE, trustedLedgerKeyRotations } from './ledger-key-rotations-file.js'
import { StartupError } from './startup-error.js'

/**
 * `ledger rotate-key`: a new signing key in `<data dir>/ledger-signing.key`, the old one kept as
 * `ledger-signing.key.<old key id>.retired`, and the hand-over (signed by both) appended to
 * `ledger-key-rotations.json`, so the checkpoints the new key signs are trusted by whoever
 * trusts the old one. In that order — the new key staged, the record, then the swap — so a
 * rotation cut short is finished by running it again, with the key it made.
 */
export async function rotateLedgerSigningKey(config: Config, db: Db, clock: Clock): Promise<LedgerKeyRotated> {
  const file = path.join(config.HOOKLEDGER_DATA_DIR, LEDGER_SIGNING_KEY_FILE)
  if (config.HOOKLEDGER_LEDGER_SIGNING_KEY) {
    throw new StartupError(`the ledger signing key comes from HOOKLEDGER_LEDGER_SIGNING_KEY: rotate-key rotates ${file} only; unset the setting (with the same key in that file) to rotate`)
  }
  const current = readLedgerSigningKeyFile(config)
  if (!current) throw new StartupError(`no ledger signing key at ${file} to rotate: the first process that seals makes one`)
  const handOvers = trustedLedgerKeyRotations(config)
  const rotationsFile = path.join(config.HOOKLEDGER_DATA_DIR, LEDGER_KEY_ROTATIONS_FILE)

  const staged = readStagedLedgerSigningKey(config)
  const cutShort = staged && handOvers.find((h) => h.from === current.keyId && h.to === staged.keyId)
  if (staged && cutShort) {
    const { retiredFile } = promoteStagedLedgerSigningKey(config, current, staged)
    return { oldKeyId: current.keyId, newKeyId: staged.keyId, publicKey: staged.publicKey, rotatedAt: cutShort.rotatedAt, retiredFile, rotationsFile, resumed: true }
  }

  // Only the key a sealer may use hands over: from any other, the hand-over would lead nowhere
  // the ledger's checkpoints go.
  loadLedgerSigningKey(config, { lastCheckpointKeyId: await lastCheckpointKeyId(db), handOvers })
  const secret = generateLedgerSigningKey().secret
  const next = parseLedgerSigningKey(secret)
  const record = signKeyRotation(current, next, clock.now())
  stageLedgerSigningKey(config, secret)
  appendLedgerKeyRotation(config, record)
  const { retiredFile } = promoteStagedLedgerSigningKey(config, current, next)
  return { oldKeyId: current.keyId, newKeyId: next.keyId, publicKey: next.publicKey, rotatedAt: record.rotated_at, retiredFile, rotationsFile, resumed: false }
}
