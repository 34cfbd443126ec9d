import { readFileSync, renameSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { verifiedHandOvers, type LedgerKeyHandOver, type LedgerKeyRotation } from '@hookledger/ledger'
import type { Config } from './config.js'
import { StartupError } from './startup-error.js'

/**
 * `<data dir>/ledger-key-rotations.json`: every hand-over `ledger rotate-key` made here, a JSON
 * array of hookledger.key-rotation.v1 records, oldest first. It holds no secret (the records
 * are signed statements and public keys), so any process may read it.
 */
export const LEDGER_KEY_ROTATIONS_FILE = 'ledger-key-rotations.json'

/** The records in the file (none when it does not exist), the hand-overs they prove, and which prove none. */
export function readLedgerKeyRotations(config: Config): {
  readonly file: string
  readonly records: readonly unknown[]
  readonly handOvers: readonly LedgerKeyHandOver[]
  readonly rejected: readonly { index: number; reason: string }[]
} {
  const file = path.join(config.HOOKLEDGER_DATA_DIR, LEDGER_KEY_ROTATIONS_FILE)
  let records: unknown
  try {
    records = JSON.parse(readFileSync(file, 'utf8'))
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { file, records: [], handOvers: [], rejected: [] }
    throw new StartupError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, { cause: err })
  }
  if (!Array.isArray(records)) throw new StartupError(`cannot read ${file}: not a JSON array of key rotations`)
  return { file, records, ...verifiedHandOvers(records) }
}

/** The hand-overs of the file, for a process about to sign: a record that proves nothing stops it. */
export function trustedLedgerKeyRotations(config: Config): readonly LedgerKeyHandOver[] {
  const { file, handOvers, rejected } = readLedgerKeyRotations(config)
  const bad = rejected[0]
  if (bad) throw new StartupError(`${file}: record ${bad.index + 1} is not a valid key hand-over (${bad.reason}); restore the file as rotate-key wrote it`)
  return handOvers
}

/** Appends a record (written beside the file, then renamed over it: a crash leaves the old array whole). */
export function appendLedgerKeyRotation(config: Config, record: LedgerKeyRotation): string {
  const { file, records } = readLedgerKeyRotations(config)
  writeFileSync(`${file}.tmp`, JSON.stringify([...records, record], null, 2) + '\n', { mode: 0o644 })
  renameSync(`${file}.tmp`, file)
  return file
}
