/**
 * `ledger archive --before <checkpoint>`: the sealed history of the checkpoints before it goes
 * to a file, and the ledger partitions holding only those rows leave the database.
 *
 * 1. A signed projection snapshot must lie past the archived rows (its horizon above the
 *    last archived checkpoint's rows), so replay and verify never need them again: the latest
 *    one, or a new one taken here.
 * 2. The checkpoints after the previous archive up to `before - 1` are written whole, each
 *    with its leaves and rows, after the checkpoint before them (the anchor): the export
 *    format, which `ledger verify --file` checks with the public key alone; gzip when the name
 *    ends in `.gz`. The file is written beside its final name, flushed to disk, verified, then
 *    renamed.
 * 3. The lowest partitions whose rows those checkpoints all sealed are dropped through the
 *    audited retention function, whose `ledger.retention` entry records the file's SHA-256 and
 *    the last checkpoint it holds; a checkpoint then seals that entry.
 */
import { rename, rm } from 'node:fs/promises'
import { basename } from 'node:path'
import { LedgerExportVerifier } from '../proof/ledger-export-verify.js'
import { parseLedgerPublicKey, type LedgerSigningKey } from '../proof/ledger-checkpoint.js'
import { type ArchiveDescription } from '@hookledger/core'
import { ledgerTrustAnchor, type LedgerKeyHandOver } from '../proof/ledger-key-rotation.js'
import { sql } from 'kysely'
import type { Db } from '@hookledger/store'
import { ledgerExport } from './ledger-export.js'
import { ledgerFileLines, ledgerFileWrite } from './ledger-file.js'
import { ledgerPartitionsSealedThrough, ledgerRetention } from './ledger-partitions.js'
import { ledgerSealUntil } from './ledger-seal.js'
import { ledgerSnapshotTake } from './ledger-snapshot.js'
import { archivedCheckpoint, latestSignedSnapshot } from './ledger-snapshot-read.js'

export interface ArchiveResult {
  readonly archive: ArchiveDescription
  /** Where the rows left the database: rows and partitions dropped, and below which position (null: none could go yet). */
  readonly dropped: { readonly rows: number; readonly partitions: number; readonly beforePosition: string | null }
  /** The snapshot replay and verify start from now. */
  readonly snapshot: number
  readonly ms: number
}

export class ArchiveError extends Error {
  constructor(
    readonly code: 'checkpoint_unknown' | 'already_archived' | 'snapshot_behind' | 'archive_unverified',
    message: string,
  ) {
    super(message)
  }
}

/** Archives the checkpoints before `beforeCheckpoint` to `file` and drops what it may (see the file's comment). */
export async function ledgerArchive(
  db: Db,
  params: {
    beforeCheckpoint: number
    file: string
    key: LedgerSigningKey
    now: () => Date
    actor: string
    onProgress?: (p: { phase: string; rows: number; ms: number }) => void
    /** The key hand-overs (rotate-key) the chain checks follow. */
    handOvers?: readonly LedgerKeyHandOver[]
  },
): Promise<ArchiveResult> {
  const started = performance.now()
  const through = params.beforeCheckpoint - 1
  const target = await checkpointLast(db, through)
  if (target === undefined) {
    throw new ArchiveError('checkpoint_unknown', `--before ${params.beforeCheckpoint}: there is no checkpoint ${through} to archive through (see \`hookledger ledger checkpoint\`)`)
  }
  const after = await archivedCheckpoint(db)
  if (through <= after) throw new ArchiveError('already_archived', `checkpoints up to ${after} are archived already`)

  let snapshot = await latestSignedSnapshot(db)
  const covers = (s: typeof snapshot) => s !== null && (target.last_tx_id === null || BigInt(target.last_tx_id) < BigInt(s.descriptor.horizon))
  if (!covers(snapshot)) {
    await ledgerSnapshotTake(db, { key: params.key, now: params.now, ...(params.handOvers ? { handOvers: params.handOvers } : {}), ...(params.onProgress ? { onProgress: params.onProgress } : {}) })
    snapshot = await latestSignedSnapshot(db)
    if (!covers(snapshot)) {
      throw new ArchiveError('snapshot_behind', `checkpoint ${through} seals rows of transactions still running when the latest snapshot was cut: archive an earlier checkpoint, or try again later`)
    }
  }

  const archive = await writeArchive(db, { ...params, after, through, started })
  // The retention function drops exactly these (and refuses if one no longer qualifies).
  const { beforePosition, partitions } = await ledgerPartitionsSealedThrough(db, {
    last: target.last_tx_id ? { tx_id: target.last_tx_id, position: target.last_position! } : null,
    belowPosition: snapshot!.descriptor.before_position,
  })
  const rows = await ledgerRetention(db, { throughCheckpoint: through, beforePosition, archive, actor: params.actor, now: params.now() })
  await sealRetentionEntry(db, params)
  return { archive, dropped: { rows, partitions, beforePosition }, snapshot: snapshot!.descriptor.seq, ms: Math.round(performance.now() - started) }
}

async function checkpointLast(db: Db, seq: number) {
  if (!Number.isSafeInteger(seq) || seq < 1) return undefined
  return (
    await sql<{ last_tx_id: string | null; last_position: string | null }>`
      select last_tx_id::text, last_position::text from ledger_checkpoints where seq = ${seq}::bigint
    `.execute(db)
  ).rows[0]
}

/** Writes, flushes, verifies and renames the archive file; returns its description. */
async function writeArchive(
  db: Db,
  p: { file: string; key: LedgerSigningKey; after: number; through: number; started: number; onProgress?: (p: { phase: string; rows: number; ms: number }) => void; handOvers?: readonly LedgerKeyHandOver[] },
): Promise<ArchiveDescription> {
  // `.partial` before the extension, so a `.gz` archive is compressed from the start.
  const partial = p.file.endsWith('.gz') ? `${p.file.slice(0, -3)}.partial.gz` : `${p.file}.partial`
  let rows = 0
  let written: { sha256: string; bytes: number }
  try {
    written = await ledgerFileWrite(partial, async (write) => {
      let buffered: string[] = []
      await ledgerExport(db, {
        checkpoints: { after: p.after, through: p.through },
        onLine: async (line) => {
          if (line.type === 'row') rows++
          buffered.push(JSON.stringify(line) + '\n')
          if (buffered.length >= 1000) {
            const text = buffered.join('')
            buffered = []
            await write(text)
          }
        },
        onProgress: (n) => p.onProgress?.({ phase: 'archive', rows: n, ms: Math.round(performance.now() - p.started) }),
      })
      if (buffered.length > 0) await write(buffered.join(''))
    })
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') await rm(partial, { force: true })
    throw err
  }
  const handOvers = p.handOvers ?? []
  const verifier = new LedgerExportVerifier({ publicKey: ledgerTrustAnchor(parseLedgerPublicKey(p.key.publicKey), handOvers), handOvers, maxProblems: 1 })
  for await (const line of ledgerFileLines(partial)) verifier.pushLine(line)
  const verdict = verifier.finish()
  if (!verdict.ok || verdict.unsealedRows > 0) {
    await rm(partial, { force: true })
    const problem = verdict.malformed[0] ?? (verdict.problems[0] ? `${verdict.problems[0].kind} at position ${verdict.problems[0].position ?? '-'}` : `${verdict.unsealedRows} unsealed rows`)
    throw new ArchiveError('archive_unverified', `the archive does not verify (${problem}): nothing was dropped; run \`hookledger ledger verify\``)
  }
  await rename(partial, p.file)
  return { file: basename(p.file), sha256: written.sha256, rows, first_checkpoint: p.after + 1, last_checkpoint: p.through }
}

/** Seals until the retention entry just appended is in a checkpoint (verification trusts only a sealed one). */
async function sealRetentionEntry(db: Db, params: { key: LedgerSigningKey; now: () => Date }): Promise<void> {
  await ledgerSealUntil(db, {
    key: params.key,
    now: params.now,
    withinMs: 30_000,
    done: async () =>
      (
        await sql`
          select 1 from ledger l, (select last_tx_id, last_position from ledger_checkpoints order by seq desc limit 1) c
          where l.kind = 'ledger.retention' and (l.tx_id, l.position) > (c.last_tx_id, c.last_position) limit 1
        `.execute(db)
      ).rows.length === 0,
  })
}
