import { readFileSync } from 'node:fs'
import {
  LedgerExportVerifier,
  parseLedgerPublicKey,
  parseGivenLedgerKey,
  ledgerVerifierKey,
  type ChainProblem,
  type GivenLedgerKey,
  ledgerKeyId,
  type TlogPolicy,
  ed25519NoteVerifier,
  encodeVerifierKey,
  parseCheckpointBody,
  parseTlogPolicy,
  servedCheckpoint,
  verifyCheckpointWithPolicy,
  noteText,
  ledgerKeysAccepted,
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
import { verifyReceiptFile } from './ledger-receipt-commands.js'

import { INTACT, TAMPERED, USAGE } from './ledger-exit-codes.js'
export { INTACT, TAMPERED, UNPROVEN, USAGE } from './ledger-exit-codes.js'

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

/**
 * `ledger public-key`: the key anyone verifies checkpoints, exports and receipts with, as the
 * log's verifier key (`<origin>+<key id>+<base64(0x01 ‖ key)>`, what any C2SP note verifier
 * takes); `--json` adds the origin, the key id and the `hlpk_` form.
 */
export function ledgerPublicKeyCommand(io: CliIo, args: { publicKey: string | undefined; origin: string | null; json?: boolean | undefined }) {
  if (args.publicKey === undefined) {
    io.err('no ledger signing key in this data dir yet: the first process that seals makes one')
    return USAGE
  }
  if (args.origin === null) {
    // Before the log has a name (nothing has started against this database yet), only the raw key.
    if (args.json) io.out(JSON.stringify({ vkey: null, origin: null, key_id: null, public_key: args.publicKey }))
    else io.out(args.publicKey)
    return INTACT
  }
  const vkey = ledgerVerifierKey(args.origin, args.publicKey)
  if (args.json) io.out(JSON.stringify({ vkey, origin: args.origin, key_id: vkey.split('+')[1], public_key: args.publicKey }))
  else io.out(vkey)
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
    /** A checkpoint note file saved earlier: the log's tree must extend it. */
    since?: string | undefined
    /** A tlog-policy file: the served checkpoint must carry its quorum (receipts too). */
    policy?: string | undefined
    full?: boolean | undefined
    json?: boolean | undefined
    /** Key hand-overs (rotate-key): checkpoints of the keys before and after the trusted one verify too. */
    handOvers?: readonly LedgerKeyHandOver[]
  },
): Promise<number> {
  let publicKey: Uint8Array
  let trusted: GivenLedgerKey
  try {
    const text = args['public-key'] ?? args.defaultPublicKey
    if (!text) {
      io.err(db ? '--public-key is required: this data dir knows no public key for the ledger\'s latest checkpoint' : '--public-key is required to verify a file or a receipt')
      return USAGE
    }
    trusted = parseGivenLedgerKey(text)
    publicKey = trusted.publicKey
  } catch (err) {
    io.err(`--public-key: ${(err as Error).message}`)
    return USAGE
  }
  let policy: TlogPolicy | null = null
  if (args.policy !== undefined) {
    try {
      policy = parseTlogPolicy(readFileSync(args.policy, 'utf8'))
    } catch (err) {
      io.err(`--policy ${args.policy}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
      return USAGE
    }
  }
  if (args.file && args.receipt) {
    io.err('verify either --file or --receipt, not both')
    return USAGE
  }
  if (args.receipt) return verifyReceiptFile(io, args.receipt, trusted, args.json, policy)
  if (args.file) return verifyExportFile(io, args.file, publicKey, args.json)
  if (!db) {
    io.err('no database to verify')
    return USAGE
  }
  const open = await db()
  try {
    const tick = progress(io)
    let since: string | undefined
    if (args.since !== undefined) {
      try {
        since = readFileSync(args.since, 'utf8')
      } catch (err) {
        io.err(`--since: cannot read ${args.since}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
        return USAGE
      }
    }
    const witnessed = policy ? await witnessedCheckpoint(open.db, policy, publicKey, args.handOvers ?? []) : null
    const { ok: ledgerOk, chain, tree, replay } = await ledgerVerify(open.db, {
      publicKey,
      // The quorum's checkpoint, when there is one and no note was given: the tree must extend it.
      since: since ?? (witnessed?.ok ? witnessed.note : undefined),
      ...(args.handOvers ? { handOvers: args.handOvers } : {}),
      full: args.full === true,
      chainOnly: args['chain-only'] === true,
      onProgress: (p) => tick(`chain: ${p.rows} rows, ${p.checkpoints} checkpoints`),
    })
    const snapshotOk = replay?.snapshot?.digestMatches ?? true
    const ok = ledgerOk && (witnessed?.ok ?? true)
    if (args.json) io.out(JSON.stringify({ ok, chain, tree, witnessed: witnessed && { ok: witnessed.ok, size: witnessed.size, witnesses: witnessed.witnesses, problem: witnessed.problem }, replay }))
    else {
      io.out(`chain: ${chain.rows} rows ${startText(chain.start, chain.headerOnly)}(${chain.sealedRows} sealed in ${chain.checkpoints - chain.headerOnly} checkpoints, ${chain.unsealedRows} not sealed yet) in ${chain.ms} ms`)
      // Every checkpoint failing its signature and nothing else: the key given is not the log's. One line, not one per checkpoint.
      const anotherKey = chain.problems.length > 0 && chain.problems.every((p) => p.kind === 'checkpoint_signature_bad') && tree.problems.every((p) => p.kind === 'note_unsigned')
      if (anotherKey) io.out(`TAMPERED signed by another key: none of the ${chain.checkpoints} checkpoints verifies with the key given (key id ${ledgerKeyId(publicKey)}); verify with the log's own key (\`hookledger ledger public-key\`)`)
      else for (const p of chain.problems) io.out(problemLine(p))
      if (chain.problemsOmitted > 0) io.out(`… and ${chain.problemsOmitted} more problems`)
      if (chain.ok) io.out('chain intact: every row and checkpoint verifies')
      else io.out(`first bad position: ${chain.firstBadPosition ?? '-'}`)
      if (!anotherKey) for (const p of tree.problems) io.out(`TAMPERED tree ${p.kind}${p.size !== null ? ` at size ${p.size}` : ''}: ${p.detail}`)
      if (witnessed) io.out(witnessed.ok ? `witnessed: the checkpoint of ${witnessed.size} rows carries the policy's quorum (${witnessed.witnesses.join(', ')})` : `TAMPERED witness quorum: ${witnessed.problem}`)
      if (tree.ok) io.out(`tree intact: log ${tree.origin ?? '-'} of ${tree.size} rows; ${tree.leavesChecked} leaves checked against their rows, ${tree.checkpointsProven} checkpoints proven prefixes of it${since ? ', and so is the saved one' : ''}`)
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

/** The checkpoint the log serves under `policy`, and whether it carries the quorum (signed by a trusted key). */
async function witnessedCheckpoint(db: Db, policy: TlogPolicy, publicKey: Uint8Array, handOvers: readonly LedgerKeyHandOver[]) {
  const served = await servedCheckpoint(db, policy)
  if (!served) return { ok: false, size: 0, witnesses: [] as string[], note: '', problem: 'the log has no checkpoint to carry a quorum' }
  const origin = parseCheckpointBody(noteText(served.note)).origin
  const keys = ledgerKeysAccepted(publicKey, handOvers)
  try {
    const opened = verifyCheckpointWithPolicy(policy, served.note, keys.map((k) => ed25519NoteVerifier(encodeVerifierKey(origin, k))))
    return { ok: true, size: served.size, witnesses: [...opened.witnesses], note: served.note, problem: null }
  } catch (err) {
    return { ok: false, size: served.size, witnesses: [...served.witnesses], note: served.note, problem: `the newest checkpoint (${served.size} rows) does not carry the policy's quorum: ${(err as Error).message}` }
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
