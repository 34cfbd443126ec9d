/**
 * The ledger's lifecycle over the `history` scenario's months of traffic (1,000,000 completed
 * deliveries; quick: 20,000): seal it all, take the first projection snapshot (which verifies
 * the whole chain first and folds every entry), append a day's worth of new traffic, then
 * `ledger verify` (chain + replay) from the latest snapshot beside `ledger verify --full` in the
 * same run — the first should follow the suffix, the second all time — and finally `ledger
 * archive` of everything before the snapshot: the file written and verified, and the partitions
 * it held dropped. Verify runs once more after the archive.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import {
  generateLedgerSigningKey,
  parseLedgerPublicKey,
  parseLedgerSigningKey,
  ledgerArchive,
  ledgerChainVerify,
  ledgerReplayVerify,
  ledgerSeal,
  ledgerSnapshotTake,
} from '@hookledger/ledger'
import { sql } from 'kysely'
import { type Db } from '@hookledger/store'
import { ClaimProbe } from './claim-probe.js'
import type { Env, Row } from './harness.js'
import { cfg } from './settings.js'
import { round, type Progress } from './util.js'

/** Events of new traffic after the snapshot (each fans out to every endpoint). */
const SUFFIX_EVENTS = 20

export async function ledgerLifecycle(db: Db, env: Env, progress: Progress, owner: string): Promise<{ metrics: Record<string, unknown>; rows: Row[] }> {
  const key = parseLedgerSigningKey(generateLedgerSigningKey().secret)
  const publicKey = parseLedgerPublicKey(key.publicKey)
  const now = () => new Date()
  const n = cfg.historyDeliveries.toLocaleString('en')

  progress.phase('sealing the history')
  let t = performance.now()
  const sealed = await ledgerSeal(db, { key, now: now() })
  const sealMs = performance.now() - t

  progress.phase('the first projection snapshot (verifies the whole chain, folds every entry)')
  t = performance.now()
  const snapshot = await ledgerSnapshotTake(db, { key, now, signWithinMs: 120_000 })
  const snapshotMs = performance.now() - t
  const snapshotBytes = Number(
    (await sql<{ bytes: string }>`select pg_total_relation_size('ledger_snapshot_rows')::text as bytes`.execute(db)).rows[0]!.bytes,
  )
  const snapshotRows = snapshot.snapshot.endpoints + snapshot.snapshot.deliveries

  progress.phase(`new traffic after the snapshot (${SUFFIX_EVENTS} events to every endpoint)`)
  const suffixDeliveries = await new ClaimProbe(db).enqueue(env, owner, SUFFIX_EVENTS)
  await ledgerSeal(db, { key, now: now() })

  const verify = async (from: 'snapshot' | 'genesis') => {
    const started = performance.now()
    const chain = await ledgerChainVerify(db, { publicKey, from })
    const replay = await ledgerReplayVerify(db, { from })
    const ok = chain.ok && replay.differencesTotal === 0 && (replay.snapshot?.digestMatches ?? true)
    if (!ok) throw new Error(`ledger verify from ${from} is not clean: ${JSON.stringify(chain.problems.slice(0, 3))} ${JSON.stringify(replay.differences.slice(0, 3))}`)
    return { ms: performance.now() - started, chainRows: chain.rows, replayRows: replay.ledgerRows }
  }
  progress.phase('ledger verify from the latest snapshot')
  const fromSnapshot = await verify('snapshot')
  progress.phase('ledger verify --full (every row, replay from the first entry)')
  const full = await verify('genesis')

  progress.phase('ledger archive of everything before the snapshot')
  const dir = mkdtempSync(path.join(tmpdir(), 'hookledger-bench-archive-'))
  try {
    const file = path.join(dir, 'archive.jsonl')
    t = performance.now()
    const archive = await ledgerArchive(db, { beforeCheckpoint: snapshot.checkpoint, file, key, now, actor: 'operator:bench' })
    const archiveMs = performance.now() - t
    const fileBytes = statSync(file).size
    progress.phase('ledger verify after the archive')
    const after = await verify('snapshot')
    const s = (ms: number) => round(ms / 1000, 2).toFixed(2)
    return {
      metrics: {
        seal: { rows: sealed.rows, checkpoints: sealed.checkpoints.length, ms: Math.round(sealMs), rows_per_s: Math.round(sealed.rows / (sealMs / 1000)) },
        snapshot: { ...snapshot.snapshot, checkpoint: snapshot.checkpoint, entries_folded: snapshot.entriesFolded, ms: Math.round(snapshotMs), bytes: snapshotBytes, bytes_per_row: Math.round(snapshotBytes / snapshotRows) },
        suffix_deliveries: suffixDeliveries,
        verify_from_snapshot: { ...fromSnapshot, ms: Math.round(fromSnapshot.ms) },
        verify_full: { ...full, ms: Math.round(full.ms) },
        archive: { ...archive.archive, ...archive.dropped, file_bytes: fileBytes, ms: Math.round(archiveMs) },
        verify_after_archive: { ...after, ms: Math.round(after.ms) },
      },
      rows: [
        { metric: `seal ${n} deliveries' ledger (rows/s)`, value: String(Math.round(sealed.rows / (sealMs / 1000))), target: '—', pass: null },
        { metric: `first projection snapshot @ ${n} (s, incl. verifying the chain)`, value: s(snapshotMs), target: '—', pass: null },
        { metric: 'projection snapshot on disk, bytes per row (the latest one only is kept)', value: String(Math.round(snapshotBytes / snapshotRows)), target: '—', pass: null },
        {
          metric: `ledger verify from the latest snapshot, +${suffixDeliveries.toLocaleString('en')} deliveries since: ledger rows read (full: ${full.chainRows.toLocaleString('en')})`,
          value: String(fromSnapshot.chainRows),
          target: 'the suffix',
          pass: fromSnapshot.chainRows < full.chainRows / 10 && fromSnapshot.replayRows < full.replayRows / 10,
        },
        { metric: `ledger verify from the latest snapshot (s; replay still compares every live row)`, value: s(fromSnapshot.ms), target: '—', pass: null },
        { metric: `ledger verify --full @ ${n} (s)`, value: s(full.ms), target: '—', pass: null },
        {
          metric: `archive + drop: ${archive.dropped.partitions} partitions, ${archive.dropped.rows.toLocaleString('en')} rows (s)`,
          value: s(archiveMs),
          target: 'drops ≥ 1',
          pass: archive.dropped.partitions >= 1,
        },
        { metric: 'ledger verify after the archive (s)', value: s(after.ms), target: '—', pass: null },
      ],
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
