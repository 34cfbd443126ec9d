import { readFileSync } from 'node:fs'
import {
  LedgerExportVerifier,
  parseLedgerPublicKey,
  verifyLedgerReceipt,
  type ChainProblem,
  type LedgerReceipt,
  type LedgerKeyHandOver,
  type LedgerSigningKey,
  ledgerFileLines,
  ledgerExport,
  ledgerSeal,
  ledgerVerify,
  type ChainVerifyStart,
} from '@hookledger/ledger'
import { type Db } from '@hookledger/store'
import { snapshotTamperedLine, type CliIo } from './commands.js'

/** Exit codes of the ledger's evidence commands. */
export const INTACT = 0
export const TAMPERED = 1
export const USAGE = 2

const problemLine = (p: ChainProblem) =>
  `TAMPERED ${p.kind}${p.position !== null ? ` at position ${p.position}` : ''}${p.checkpoint !== null ? ` (checkpoint ${p.checkpoint})` : ''}: ${p.detail}`

/** A progress line on stderr at most every 2 s, once the work has run for 2 s. */
export function progress(io: CliIo) {
  const started = Date.now()
  let last = started
  return (what: string) => {
    const now = Date.now()
    if (now - started < 2000 || now - last < 2000) return
    last = now
    io.err(`… ${what} (${((now - started) / 1000).toFixed(0)} s)`)
  }
}

/** `ledger checkpoint [--json]`: seals now (a checkpoint even when nothing is new). */
export async function ledgerCheckpointCommand(db: Db, io: CliIo, args: { key: LedgerSigningKey; now: Date; json?: boolean | undefined }) {
  const sealed = await ledgerSeal(db, { key: args.key, now: args.now, force: true })
  if (args.json) io.out(JSON.stringify({ rows: sealed.rows, checkpoints: sealed.checkpoints }))
  else {
    const last = sealed.checkpoints[sealed.checkpoints.length - 1]
    io.out(last ? `sealed ${sealed.rows} rows; checkpoint ${last.seq} at position ${last.last?.position ?? '-'} (${last.total} rows in all), chain ${last.chain_hash}` : 'another sealer is running; try again')
  }
  return INTACT
}

/** `ledger public-key`: the key anyone verifies checkpoints, exports and receipts with. */
export function ledgerPublicKeyCommand(io: CliIo, args: { publicKey: string | undefined }) {
  if (args.publicKey === undefined) {
    io.err('no ledger signing key in this data dir yet: the first process that seals makes one')
    return USAGE
  }
  io.out(args.publicKey)
  return INTACT
}

/** What `ledger rotate-key` did (the server's rotateLedgerSigningKey). */
export interface LedgerKeyRotated {
  readonly oldKeyId: string
  readonly newKeyId: string
  /** The new key's public half. */
  readonly publicKey: string
  readonly rotatedAt: string
  /** Where the old key is kept, and the hand-over recorded. */
  readonly retiredFile: string
  readonly rotationsFile: string
  /** A rotation cut short earlier was finished with the key it had made. */
  readonly resumed: boolean
}

/** `ledger rotate-key [--json]`: says what was rotated and what the operator does next. */
export function ledgerRotateKeyCommand(io: CliIo, args: { rotated: LedgerKeyRotated; json?: boolean | undefined }) {
  const r = args.rotated
  if (args.json) {
    io.out(JSON.stringify({ old_key_id: r.oldKeyId, new_key_id: r.newKeyId, public_key: r.publicKey, rotated_at: r.rotatedAt, retired_file: r.retiredFile, rotations_file: r.rotationsFile, resumed: r.resumed }))
    return INTACT
  }
  io.out(`${r.resumed ? 'finished the rotation' : 'rotated the ledger signing key'}: key ${r.oldKeyId} handed over to key ${r.newKeyId} (${r.publicKey}), recorded in ${r.rotationsFile}; the old key is kept as ${r.retiredFile}`)
  io.out('restart every process that seals (workers, serve --role all) with the new ledger-signing.key and ledger-key-rotations.json: a process still holding the old key is refused at its next start')
  return INTACT
}

/**
 * `ledger verify [--json] [--chain-only] [--full] [--public-key K]` over the database: from the
 * latest signed snapshot on (every checkpoint's signature and links, the rows since the
 * snapshot's horizon, the replay from the snapshot), or with `--full` every row still in the
 * database and the replay from the first entry (from the snapshot once history is archived).
 * `--file F` (an export or an archive) or `--receipt F` with `--public-key K` offline.
 * Exit 0 intact, 1 tampered, 2 usage.
 */
export async function ledgerVerifyCommand(
  db: (() => Promise<{ db: Db; close(): Promise<void> }>) | null,
  io: CliIo,
  args: {
    /** The key trusted when --public-key is not given (this data dir's, or the latest checkpoint's). */
    defaultPublicKey?: string | undefined
    file?: string | undefined
    receipt?: string | undefined
    'public-key'?: string | undefined
    'chain-only'?: boolean | undefined
    full?: boolean | undefined
    json?: boolean | undefined
    /** Key hand-overs (rotate-key): checkpoints of the keys before and after the trusted one verify too. */
    handOvers?: readonly LedgerKeyHandOver[]
  },
): Promise<number> {
  let publicKey: Uint8Array
  try {
    const text = args['public-key'] ?? args.defaultPublicKey
    if (!text) {
      io.err(db ? '--public-key is required: this data dir knows no public key for the ledger\'s latest checkpoint' : '--public-key is required to verify a file or a receipt')
      return USAGE
    }
    publicKey = parseLedgerPublicKey(text)
  } catch (err) {
    io.err(`--public-key: ${(err as Error).message}`)
    return USAGE
  }
  if (args.file && args.receipt) {
    io.err('verify either --file or --receipt, not both')
    return USAGE
  }
  if (args.receipt) return verifyReceiptFile(io, args.receipt, publicKey, args.json)
  if (args.file) return verifyExportFile(io, args.file, publicKey, args.json)
  if (!db) {
    io.err('no database to verify')
    return USAGE
  }
  const open = await db()
  try {
    const tick = progress(io)
    const { ok, chain, replay } = await ledgerVerify(open.db, {
      publicKey,
      ...(args.handOvers ? { handOvers: args.handOvers } : {}),
      full: args.full === true,
      chainOnly: args['chain-only'] === true,
      onProgress: (p) => tick(`chain: ${p.rows} rows, ${p.checkpoints} checkpoints`),
    })
    const snapshotOk = replay?.snapshot?.digestMatches ?? true
    if (args.json) io.out(JSON.stringify({ ok, chain, replay }))
    else {
      io.out(`chain: ${chain.rows} rows ${startText(chain.start, chain.headerOnly)}(${chain.sealedRows} sealed in ${chain.checkpoints - chain.headerOnly} checkpoints, ${chain.unsealedRows} not sealed yet) in ${chain.ms} ms`)
      for (const p of chain.problems) io.out(problemLine(p))
      if (chain.problemsOmitted > 0) io.out(`… and ${chain.problemsOmitted} more problems`)
      if (chain.ok) io.out('chain intact: every row and checkpoint verifies')
      else io.out(`first bad position: ${chain.firstBadPosition ?? '-'}`)
      if (replay) {
        if (!snapshotOk) io.out(snapshotTamperedLine(replay.snapshot!))
        for (const d of replay.differences) io.out(`DIFF ${d.table} ${d.key}: ${d.kind}${d.columns.length ? ` (${d.columns.join(', ')})` : ''}`)
        const start = replay.snapshot ? ` from snapshot ${replay.snapshot.seq} (position ${replay.snapshot.beforePosition})` : ''
        io.out(replay.differencesTotal === 0 ? `replay: ${replay.ledgerRows} rows${start}, no differences` : `replay: ${replay.differencesTotal} differences`)
      }
    }
    return ok ? INTACT : TAMPERED
  } finally {
    await open.close()
  }
}

/** Where the chain was read from, for the summary line. */
function startText(start: ChainVerifyStart, headers: number): string {
  if (start.afterCheckpoint === null) return ''
  const why = start.reason === 'archive' ? 'the archive' : 'the latest snapshot'
  return `after checkpoint ${start.afterCheckpoint} (${why}; ${headers} earlier checkpoints checked by signature and links) `
}

async function verifyExportFile(io: CliIo, file: string, publicKey: Uint8Array, json: boolean | undefined): Promise<number> {
  const verifier = new LedgerExportVerifier({ publicKey })
  let lines = 0
  try {
    const tick = progress(io)
    for await (const line of ledgerFileLines(file)) {
      verifier.pushLine(line)
      if (++lines % 10_000 === 0) tick(`${lines} lines`)
    }
  } catch (err) {
    io.err(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
    return USAGE
  }
  const result = verifier.finish()
  if (json) io.out(JSON.stringify(result))
  else {
    io.out(`${file}: ${result.rows} rows in ${result.checkpoints} checkpoints`)
    for (const m of result.malformed) io.out(`TAMPERED malformed: ${m}`)
    for (const p of result.problems) io.out(problemLine(p))
    if (result.problemsOmitted > 0) io.out(`… and ${result.problemsOmitted} more problems`)
    io.out(result.ok ? 'export intact: every row and checkpoint verifies with this key' : `first bad position: ${result.firstBadPosition ?? '-'}`)
  }
  return result.ok ? INTACT : TAMPERED
}

function verifyReceiptFile(io: CliIo, file: string, publicKey: Uint8Array, json: boolean | undefined): number {
  let receipt: LedgerReceipt
  try {
    receipt = JSON.parse(readFileSync(file, 'utf8')) as LedgerReceipt
  } catch (err) {
    io.err(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
    return USAGE
  }
  const result = verifyLedgerReceipt(receipt, publicKey)
  if (json) io.out(JSON.stringify(result))
  else {
    for (const p of result.problems) io.out(`TAMPERED ${p}`)
    io.out(result.ok ? `receipt intact: ${result.proven} entries proven against signed checkpoints, ${result.unsealed} not sealed yet` : 'receipt does not verify')
  }
  return result.ok ? INTACT : TAMPERED
}

/** `ledger export [--from P] [--to Q]`: JSON lines on stdout, progress on stderr. */
export async function ledgerExportCommand(db: Db, io: CliIo, args: { from?: string | undefined; to?: string | undefined }) {
  for (const [name, value] of [['--from', args.from], ['--to', args.to]] as const) {
    if (value !== undefined && !/^\d{1,19}$/.test(value)) {
      io.err(`${name} must be a ledger position`)
      return USAGE
    }
  }
  const tick = progress(io)
  const done = await ledgerExport(db, { from: args.from, to: args.to, onLine: (line) => io.out(JSON.stringify(line)), onProgress: (rows) => tick(`${rows} rows exported`) })
  io.err(`exported ${done.rows} rows in ${done.checkpoints} checkpoints`)
  return INTACT
}
