import { resolve } from 'node:path'
import {
  type ChainRow,
  ledgerRowIsAbout,
  type LedgerKeyHandOver,
  type LedgerSigningKey,
  ArchiveError,
  archivedCheckpoint,
  ledgerArchive,
  ledgerFileLines,
  ledgerSnapshotTake,
  SnapshotError,
} from '@hookledger/ledger'
import { type Db } from '@hookledger/store'
import type { CliIo } from './commands.js'
import { INTACT, progress, TAMPERED, USAGE } from './ledger-chain-commands.js'

/**
 * `ledger snapshot [--json]`: folds the projections up to now into a snapshot a checkpoint
 * signs; replay and `ledger verify` start from the latest one. Exit 0, or 1 when the ledger does
 * not verify or a history breaks a rule (nothing is stored then).
 */
export async function ledgerSnapshotCommand(db: Db, io: CliIo, args: { key: LedgerSigningKey; handOvers?: readonly LedgerKeyHandOver[]; now: () => Date; json?: boolean | undefined }) {
  const tick = progress(io)
  try {
    const taken = await ledgerSnapshotTake(db, { key: args.key, now: args.now, ...(args.handOvers ? { handOvers: args.handOvers } : {}), onProgress: (p) => tick(`snapshot: ${p.rows} ${p.phase} rows folded`) })
    if (args.json) io.out(JSON.stringify(taken))
    else {
      const s = taken.snapshot
      io.out(
        taken.fresh
          ? `snapshot ${s.seq} below position ${s.before_position}: ${s.endpoints} endpoints, ${s.deliveries} deliveries (${taken.entriesFolded} entries folded in ${taken.ms} ms); signed by checkpoint ${taken.checkpoint}, digest ${s.digest}`
          : `nothing appended since snapshot ${s.seq} (below position ${s.before_position}, signed by checkpoint ${taken.checkpoint})`,
      )
    }
    return INTACT
  } catch (err) {
    if (!(err instanceof SnapshotError)) throw err
    io.err(`no snapshot: ${err.message}`)
    return err.code === 'snapshot_unsigned' ? USAGE : TAMPERED
  }
}

/**
 * `ledger archive --before <checkpoint> [--out FILE] [--json]`: writes the checkpoints before
 * <checkpoint> (after the previous archive) to FILE — by default
 * `hookledger-ledger-<first>-<last>.jsonl` in the current directory — verifies it, then drops
 * the ledger partitions holding only its rows. Exit 0, 1 when the written file does not verify
 * (nothing dropped), 2 usage.
 */
export async function ledgerArchiveCommand(
  db: Db,
  io: CliIo,
  args: { key: LedgerSigningKey; handOvers?: readonly LedgerKeyHandOver[]; now: () => Date; before?: string | undefined; out?: string | undefined; json?: boolean | undefined },
) {
  if (args.before === undefined || !/^[1-9][0-9]{0,15}$/.test(args.before)) {
    io.err('--before must be a checkpoint seq (see `hookledger ledger checkpoint`): the checkpoints before it are archived')
    return USAGE
  }
  const before = Number(args.before)
  const first = (await archivedCheckpoint(db)) + 1
  const file = resolve(args.out ?? `hookledger-ledger-${first}-${before - 1}.jsonl`)
  const tick = progress(io)
  try {
    const result = await ledgerArchive(db, {
      beforeCheckpoint: before,
      file,
      key: args.key,
      ...(args.handOvers ? { handOvers: args.handOvers } : {}),
      now: args.now,
      actor: 'operator:cli',
      onProgress: (p) => tick(`${p.phase}: ${p.rows} rows`),
    })
    if (args.json) io.out(JSON.stringify({ ...result, path: file }))
    else {
      const a = result.archive
      io.out(`archived ${a.first_checkpoint === a.last_checkpoint ? `checkpoint ${a.first_checkpoint}` : `checkpoints ${a.first_checkpoint}–${a.last_checkpoint}`} (${counted(a.rows, 'row')}) to ${file}, sha256 ${a.sha256}`)
      const d = result.dropped
      io.out(
        d.partitions === 0
          ? `no partition could go yet (each still holds rows of later checkpoints); they go with a later archive`
          : d.rows === 0
            ? `dropped ${counted(d.partitions, 'empty ledger partition')} below position ${d.beforePosition} (no rows left the database); replay and verify start from snapshot ${result.snapshot}`
            : `dropped ${counted(d.partitions, 'ledger partition')} (${counted(d.rows, 'row')}) below position ${d.beforePosition}; replay and verify start from snapshot ${result.snapshot}`,
      )
    }
    return INTACT
  } catch (err) {
    if (err instanceof ArchiveError) {
      io.err(`no archive: ${err.message}`)
      return err.code === 'archive_unverified' ? TAMPERED : USAGE
    }
    if (err instanceof SnapshotError) {
      io.err(`no archive: ${err.message}`)
      return err.code === 'snapshot_unsigned' ? USAGE : TAMPERED
    }
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
      io.err(`no archive: a .partial file of ${file} exists (another archive running, or one interrupted: remove it)`)
      return USAGE
    }
    throw err
  }
}

/**
 * `ledger audit --file F [--delivery ID | --endpoint ID | --event ID] [--json]`: a history read
 * from an export or archive file instead of the database (where archived history lives), no
 * database needed. The file's rows are not verified here: `ledger verify --file F` does that.
 * Entries come in position order; a retirement naming the delivery is among them, and the
 * fan-out decision that enqueued it (ledger format 3).
 */
export async function ledgerAuditFileCommand(
  io: CliIo,
  args: { file: string; delivery?: string | undefined; endpoint?: string | undefined; event?: string | undefined; json?: boolean | undefined },
): Promise<number> {
  const wanted = [args.delivery, args.endpoint, args.event].filter((v) => v !== undefined)
  if (wanted.length !== 1) {
    io.err('name exactly one of --delivery, --endpoint or --event to read from the file')
    return USAGE
  }
  const matches: ChainRow[] = []
  try {
    for await (const line of ledgerFileLines(args.file)) {
      if (!line.includes('"type":"row"')) continue
      const row = (JSON.parse(line) as { row: ChainRow }).row
      const names =
        (args.delivery !== undefined && (ledgerRowIsAbout(row, args.delivery) || retires(row, args.delivery))) ||
        (args.endpoint !== undefined && row.endpoint_id === args.endpoint) ||
        (args.event !== undefined && row.event_id === args.event)
      if (names) matches.push(row)
    }
  } catch (err) {
    io.err(`cannot read ${args.file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
    return USAGE
  }
  matches.sort((a, b) => (BigInt(a.position) < BigInt(b.position) ? -1 : 1))
  for (const r of matches) {
    if (args.json) io.out(JSON.stringify(r))
    else io.out(`${r.position}  ${r.occurred_at}  ${r.kind.padEnd(26)} ${r.actor.padEnd(24)} ${r.delivery_id ?? r.endpoint_id ?? r.event_id ?? ''}  ${JSON.stringify(r.payload)}`)
  }
  return INTACT
}

const retires = (row: ChainRow, delivery: string) =>
  row.kind === 'deliveries.retired' && Array.isArray((row.payload as { delivery_ids?: unknown })?.delivery_ids) && (row.payload as { delivery_ids: string[] }).delivery_ids.includes(delivery)

/** "1 row", "2 rows". */
function counted(n: number, noun: string): string {
  return `${n} ${n === 1 ? noun : `${noun}s`}`
}
