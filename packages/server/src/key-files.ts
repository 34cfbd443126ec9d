import { existsSync, linkSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import {
  decideLedgerSigningKey,
  generateLedgerSigningKey,
  parseLedgerPublicKey,
  parseLedgerSigningKey,
  type LedgerKeyHandOver,
  type LedgerSigningKey,
  type LedgerSigningKeyDecision,
} from '@hookledger/ledger'
import { encodeMasterKey, generateMasterKey, parseMasterKey } from '@hookledger/core'
import { createFileOnce } from '@hookledger/embedded'
import type { Config } from './config.js'
import { StartupError } from './startup-error.js'

/**
 * A secret kept in the data dir: read from `<data dir>/<file>`, generated once (mode 0600) if
 * absent. With DATABASE_URL nothing else creates the data dir, so this may be its first file.
 */
function keyFile<T>(config: Config, spec: { file: string; what: string; setting: string; generate: () => string; parse: (text: string) => T }): T {
  const file = path.join(config.HOOKLEDGER_DATA_DIR, spec.file)
  try {
    mkdirSync(config.HOOKLEDGER_DATA_DIR, { recursive: true, mode: 0o700 })
    // Processes starting together all read the first one's key, whole (createFileOnce).
    if (!existsSync(file)) createFileOnce(file, spec.generate() + '\n', 0o600)
  } catch (err) {
    throw new StartupError(
      `cannot create the ${spec.what} ${file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): set HOOKLEDGER_DATA_DIR to a writable directory or ${spec.setting}`,
      { cause: err },
    )
  }
  try {
    return spec.parse(readFileSync(file, 'utf8').trim())
  } catch (err) {
    throw new StartupError(`cannot read the ${spec.what} ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, { cause: err })
  }
}

/** The master key (seals endpoint secrets): the setting, else `<data dir>/master.key`. */
export function loadMasterKey(config: Config): Uint8Array {
  if (config.HOOKLEDGER_MASTER_KEY) return config.HOOKLEDGER_MASTER_KEY
  return keyFile(config, {
    file: 'master.key',
    what: 'master key',
    setting: 'HOOKLEDGER_MASTER_KEY',
    generate: () => encodeMasterKey(generateMasterKey()),
    parse: parseMasterKey,
  })
}

/** The signing key's file in the data dir (the name is an interface: operators copy it). */
export const LEDGER_SIGNING_KEY_FILE = 'ledger-signing.key'
/** Its public half (`hlpk_…`), written beside it by the process that seals, for the processes that do not. */
export const LEDGER_PUBLIC_KEY_FILE = 'ledger-signing.pub'

/** What the ledger says about the key a sealer may hold (ledger-keys.ts reads it). */
export interface LedgerKeyFacts {
  /** key_id of the checkpoint with the highest seq; null: no checkpoint yet. */
  readonly lastCheckpointKeyId: string | null
  /** Verified hand-overs from `<data dir>/ledger-key-rotations.json`. */
  readonly handOvers: readonly LedgerKeyHandOver[]
}

/**
 * The key that signs ledger checkpoints, for a process that seals: the setting, else
 * `<data dir>/ledger-signing.key`. Made (once, mode 0600) only while the ledger has no
 * checkpoint; once one exists, a missing key, or one the last checkpoint does not lead to, stops
 * the start with one line naming the file or setting and the key id expected
 * (decideLedgerSigningKey). The key never enters the database, a log line or an answer; only
 * its public half is written beside it (ledger-signing.pub).
 */
export function loadLedgerSigningKey(config: Config, facts: LedgerKeyFacts): LedgerSigningKey {
  const file = path.join(config.HOOKLEDGER_DATA_DIR, LEDGER_SIGNING_KEY_FILE)
  const fromSetting = config.HOOKLEDGER_LEDGER_SIGNING_KEY
  const found = fromSetting ?? readLedgerSigningKeyFile(config)
  const decision = decideLedgerSigningKey({ keyId: found?.keyId ?? null, lastCheckpointKeyId: facts.lastCheckpointKeyId, handOvers: facts.handOvers })
  if (decision.action === 'refuse') {
    throw new StartupError(refusalLine(decision, fromSetting ? 'HOOKLEDGER_LEDGER_SIGNING_KEY' : file, found?.keyId ?? null, facts.lastCheckpointKeyId))
  }
  if (found && decision.action === 'use') {
    if (!fromSetting) writeLedgerPublicKeyFile(config, found)
    return found
  }
  const made = keyFile(config, {
    file: LEDGER_SIGNING_KEY_FILE,
    what: 'ledger signing key',
    setting: 'HOOKLEDGER_LEDGER_SIGNING_KEY',
    generate: () => generateLedgerSigningKey().secret,
    parse: parseLedgerSigningKey,
  })
  writeLedgerPublicKeyFile(config, made)
  return made
}

/** The one line a refused start prints. */
function refusalLine(decision: Extract<LedgerSigningKeyDecision, { action: 'refuse' }>, source: string, keyId: string | null, lastKeyId: string | null): string {
  const expected = decision.expectedKeyIds.length > 0 ? `expected key id ${decision.expectedKeyIds.join(' or ')}` : 'no key id is expected (every key was handed over)'
  switch (decision.reason) {
    case 'missing':
      return `no ledger signing key at ${source} (nor HOOKLEDGER_LEDGER_SIGNING_KEY), but the ledger's last checkpoint is signed by key id ${lastKeyId}: copy that key's ledger-signing.key here or set HOOKLEDGER_LEDGER_SIGNING_KEY (${expected}); a new key is never made once a checkpoint exists`
    case 'mismatch':
      return `the ledger signing key of ${source} has key id ${keyId}, but the ledger's last checkpoint is signed by key id ${lastKeyId}: use that key (${expected})`
    case 'retired':
      return `the ledger signing key of ${source} (key id ${keyId}) was handed over by \`ledger rotate-key\` (ledger-key-rotations.json): use the key it made (${expected})`
  }
}

/** The key in `<data dir>/ledger-signing.key`, or null when there is none; never made here. */
export function readLedgerSigningKeyFile(config: Config): LedgerSigningKey | null {
  const file = path.join(config.HOOKLEDGER_DATA_DIR, LEDGER_SIGNING_KEY_FILE)
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw new StartupError(`cannot read the ledger signing key ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, { cause: err })
  }
  try {
    return parseLedgerSigningKey(text.trim())
  } catch (err) {
    throw new StartupError(`cannot read the ledger signing key ${file}: ${(err as Error).message}`, { cause: err })
  }
}

/** The `hlpk_…` key in `<data dir>/ledger-signing.pub`, or null when there is none (or it is not a key). */
export function readLedgerPublicKeyFile(config: Config): string | null {
  try {
    const text = readFileSync(path.join(config.HOOKLEDGER_DATA_DIR, LEDGER_PUBLIC_KEY_FILE), 'utf8').trim()
    parseLedgerPublicKey(text)
    return text
  } catch {
    return null
  }
}

/** Writes the key's public half beside it, when it is not there already; best effort (it is derived). */
function writeLedgerPublicKeyFile(config: Config, key: LedgerSigningKey): void {
  if (readLedgerPublicKeyFile(config) === key.publicKey) return
  const file = path.join(config.HOOKLEDGER_DATA_DIR, LEDGER_PUBLIC_KEY_FILE)
  const staged = `${file}.${process.pid}.tmp`
  try {
    writeFileSync(staged, key.publicKey + '\n', { mode: 0o644 })
    renameSync(staged, file)
  } catch {
    rmSync(staged, { force: true })
    // A read-only data dir: the processes that do not seal take HOOKLEDGER_LEDGER_PUBLIC_KEY instead.
  }
}

/**
 * A rotation's new key, written beside the current one as `ledger-signing.key.new` (0600)
 * before anything names it, so a rotation cut short can be finished with the key it made.
 */
export function stageLedgerSigningKey(config: Config, secret: string): void {
  const fresh = path.join(config.HOOKLEDGER_DATA_DIR, `${LEDGER_SIGNING_KEY_FILE}.new`)
  rmSync(fresh, { force: true })
  writeFileSync(fresh, secret + '\n', { mode: 0o600, flag: 'wx' })
}

/** The key a rotation staged and did not put in place yet, or null. */
export function readStagedLedgerSigningKey(config: Config): LedgerSigningKey | null {
  try {
    return parseLedgerSigningKey(readFileSync(path.join(config.HOOKLEDGER_DATA_DIR, `${LEDGER_SIGNING_KEY_FILE}.new`), 'utf8').trim())
  } catch {
    return null
  }
}

/**
 * Puts the staged key in place of `<data dir>/ledger-signing.key`, keeping the key it held
 * (`current`) as `ledger-signing.key.<its key id>.retired`: renamed over it, so a crash leaves
 * one key or the other in place, never none.
 */
export function promoteStagedLedgerSigningKey(config: Config, current: LedgerSigningKey, staged: LedgerSigningKey): { retiredFile: string } {
  const file = path.join(config.HOOKLEDGER_DATA_DIR, LEDGER_SIGNING_KEY_FILE)
  const retiredFile = `${file}.${current.keyId}.retired`
  // A hard link keeps the old key under its new name without writing the secret again.
  if (!existsSync(retiredFile)) linkSync(file, retiredFile)
  renameSync(`${file}.new`, file)
  writeLedgerPublicKeyFile(config, staged)
  return { retiredFile }
}
