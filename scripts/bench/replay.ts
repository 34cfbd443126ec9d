/**
 * Scenario `replay`: ledgerReplayVerify over the drain's ledger — rows/s, the memory it grows
 * by while streaming, and no difference between the projections and what the ledger gives.
 */
import { replayPhases } from '../bench-replay-phases.js'
import { replayClean } from './fixtures.js'
import type { ScenarioOutput } from './harness.js'
import { REPLAY_PHASES, targets } from './settings.js'
import { shared } from './shared.js'
import { log, round } from './util.js'

export async function replayScenario(): Promise<ScenarioOutput> {
  const bdb = shared.drain
  if (!bdb) throw new Error('needs the drain scenario')
  if (REPLAY_PHASES)
    log(`replay phases (ms): ${JSON.stringify(await replayPhases(bdb.db))}`)
  // Memory: the process's RSS sampled while the replay runs, above where it started (the
  // 1M-delivery figure comes from scripts/bench-replay-phases.ts --deliveries=1000000).
  const rssBefore = process.memoryUsage().rss
  let rssPeak = rssBefore
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, process.memoryUsage().rss)), 20)
  const started = performance.now()
  const report = await replayClean(bdb.db, 'replay').finally(() => clearInterval(sampler))
  const ms = performance.now() - started
  rssPeak = Math.max(rssPeak, process.memoryUsage().rss)
  const perSec = (report.ledgerRows / ms) * 1000
  const rssGrowthMb = (rssPeak - rssBefore) / 1024 / 1024
  return {
    metrics: {
      ledger_rows: report.ledgerRows,
      deliveries: report.deliveries,
      attempts: report.attempts,
      ms: Math.round(ms),
      rows_per_sec: Math.round(perSec),
      // Per delivery, whatever the ledger format (format 3 holds a third fewer rows a delivery).
      us_per_delivery: round((ms * 1000) / Math.max(1, report.deliveries), 1),
      differences: report.differencesTotal,
      peak_held: report.peakHeld,
      peak_buffered_rows: report.peakBufferedRows,
      rss_before_mb: Math.round(rssBefore / 1024 / 1024),
      rss_growth_mb: round(rssGrowthMb, 1),
    },
    rows: [
      {
        metric: 'replay memory: RSS growth (MB) while replaying the drain',
        value: round(rssGrowthMb, 1).toFixed(1),
        target: '—',
        pass: null,
      },
      {
        metric: 'ledger rows/s (replay-verify of the drain)',
        value: String(Math.round(perSec)),
        target: `≥ ${targets.replayRowsPerSec}`,
        pass: perSec >= targets.replayRowsPerSec,
      },
      {
        metric: 'replay-verify µs a delivery (its rows, and the enqueue its fan-out decision implies)',
        value: round((ms * 1000) / Math.max(1, report.deliveries), 1).toFixed(1),
        target: '—',
        pass: null,
      },
      {
        metric: 'replay differences',
        value: String(report.differencesTotal),
        target: '0',
        pass: report.differencesTotal === 0,
      },
    ],
  }
}
