/**
 * Replay-verify at scale, outside the tests.
 *
 * - `npm run bench -- --replay-phases`: `replayPhases(db)` prints where a replay of the drain's
 *   ledger spends its time (each table's stream, the final count).
 * - Standalone, on a synthetic ledger as big as asked:
 *
 *     npx tsx --conditions=source scripts/bench-replay-phases.ts [--deliveries=200000] [--endpoints=N]
 *         [--url=postgres://…/postgres] [--database=NAME] [--reuse]
 *
 *   starts an embedded PostgreSQL (or uses the server at `--url`), writes a consistent history
 *   of that many deliveries straight in SQL (every one enqueued, claimed, attempted, completed;
 *   every tenth after a 500 and a retry: ~4.3 ledger rows each), replays it, and prints one JSON
 *   line: ledger rows, rows/s, the process's peak RSS during the replay, the replay's own
 *   memory counters and phases. `--reuse` replays `--database` as it is (no generation).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { createDb, migrateToLatest, type Db } from '@hookledger/store'
import { ledgerReplayVerify } from '@hookledger/ledger'
import { openEmbeddedDatabase } from '@hookledger/embedded'
// The history generator alone: the testkit index needs a running vitest.
import { syntheticLedgerHistory } from '@hookledger/testkit/synthetic-ledger-history'

/** The phases of one replay-verify, in ms (see `ReplayReport.phaseMs`). */
export async function replayPhases(db: Db): Promise<Record<string, number>> {
  const report = await ledgerReplayVerify(db)
  return { ...report.phaseMs, total: report.ms }
}

async function main(): Promise<void> {
  const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3)
  const deliveries = Number(arg('deliveries') ?? 200_000)
  const endpoints = Number(arg('endpoints') ?? Math.max(10, Math.round(deliveries / 200)))
  const name = arg('database') ?? 'replay_bench'
  const reuse = process.argv.includes('--reuse')
  let dataDir: string | null = null
  let stop = async () => {}
  let serverUrl = arg('url')
  if (!serverUrl) {
    dataDir = mkdtempSync(path.join(tmpdir(), 'hookledger-replay-bench-'))
    const embedded = await openEmbeddedDatabase({ dataDir, settings: { max_connections: '20', log_min_messages: 'warning' } })
    serverUrl = embedded.url('postgres')
    stop = () => embedded.stop()
  }
  try {
    if (!reuse) {
      const admin = new pg.Client({ connectionString: serverUrl })
      await admin.connect()
      await admin.query(`drop database if exists ${name}`)
      await admin.query(`create database ${name}`)
      await admin.end()
    }
    const db = createDb(new pg.Pool({ connectionString: Object.assign(new URL(serverUrl), { pathname: `/${name}` }).toString(), max: 2 }))
    let generateMs = 0
    if (!reuse) {
      await migrateToLatest(db)
      const t = performance.now()
      await syntheticLedgerHistory(db, { deliveries, endpoints })
      generateMs = Math.round(performance.now() - t)
    }
    const rssBefore = process.memoryUsage().rss
    let peak = rssBefore
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20)
    const started = performance.now()
    const report = await ledgerReplayVerify(db)
    const ms = performance.now() - started
    clearInterval(sampler)
    peak = Math.max(peak, process.memoryUsage().rss)
    await db.destroy()
    const mb = (b: number) => Math.round(b / 1048576)
    const r = report as Partial<typeof report> & typeof report
    process.stdout.write(
      JSON.stringify({
        ledger_rows: r.ledgerRows,
        deliveries: r.deliveries,
        endpoints: r.endpoints,
        differences: r.differencesTotal ?? r.differences.length,
        ms: Math.round(ms),
        rows_per_sec: Math.round((r.ledgerRows / ms) * 1000),
        rss_before_mb: mb(rssBefore),
        peak_rss_mb: mb(peak),
        peak_held: r.peakHeld,
        peak_buffered_rows: r.peakBufferedRows,
        phase_ms: r.phaseMs,
        generate_ms: generateMs,
      }) + '\n',
    )
  } finally {
    await stop()
    if (dataDir) rmSync(dataDir, { recursive: true, force: true })
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err) => {
    console.error(err)
    process.exit(1)
  })
}
