import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import {
  encodeMasterKey,
  generateLedgerSigningKey,
  generateMasterKey,
  parseLedgerSigningKey,
  parseMasterKey,
  type LedgerSigningKey,
} from '@hookledger/core'
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
    if (!existsSync(file)) writeFileSync(file, spec.generate() + '\n', { mode: 0o600, flag: 'wx' })
  } catch (err) {
    // Another process may have written it first (EEXIST); anything else is a start-up failure.
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
      throw new StartupError(
        `cannot create the ${spec.what} ${file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): set HOOKLEDGER_DATA_DIR to a writable directory or ${spec.setting}`,
        { cause: err },
      )
    }
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

/**
 * The key that signs ledger checkpoints: the setting, else `<data dir>/ledger-signing.key`.
 * It never enters the database, a log line or an answer; only its public half is shown.
 */
export function loadLedgerSigningKey(config: Config): LedgerSigningKey {
  if (config.HOOKLEDGER_LEDGER_SIGNING_KEY) return config.HOOKLEDGER_LEDGER_SIGNING_KEY
  return keyFile(config, {
    file: 'ledger-signing.key',
    what: 'ledger signing key',
    setting: 'HOOKLEDGER_LEDGER_SIGNING_KEY',
    generate: () => generateLedgerSigningKey().secret,
    parse: parseLedgerSigningKey,
  })
}
