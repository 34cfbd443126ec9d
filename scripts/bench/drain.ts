/**
 * Scenarios `drain`, `drain-sealed` and `drain-off`: 20,000 deliveries (200 events × 100
 * endpoints) drained at the bench's settings, judged against the ceiling; then the same with
 * the ledger sealer on, then off again, so the chain's cost is compared with the mean of the
 * chain-off drains before and after it (warm-up and machine noise fall on both sides).
 */
import { ceilingAround } from './ceiling.js'
import { cycleBreakdown, drainTimeline } from './drain-diagnostics.js'
import { runDrain } from './drain-run.js'
import type { ScenarioContext, ScenarioOutput } from './harness.js'
import { CHECKPOINT_INTERVAL_MS, POOL_SIZE, cfg, targets } from './settings.js'
import { shared } from './shared.js'
import { round } from './util.js'

/** The drain; its database stays open for footprint, replay and seal. */
export async function drainScenario({ env, progress }: ScenarioContext): Promise<ScenarioOutput> {
  const r = await runDrain(env, progress, { name: 'bench_drain_plain', events: cfg.drainEvents, keep: true, diagnose: true })
  shared.drain = r.bdb
  shared.drainPerSec = r.perSec
  const withFanout = r.total / ((r.fanoutMs + r.spanMs) / 1000)
  shared.drainWithFanoutPerSec = withFanout
  const cycle = await cycleBreakdown(r.bdb.admin)
  const timeline = await drainTimeline(r.bdb.admin)
  progress.phase('ceiling again, after the drain')
  const { before, after, ceiling } = await ceilingAround(env)
  const ratio = r.perSec / ceiling
  const { cpu, total } = r
  return {
    metrics: {
      deliveries: total,
      endpoints: cfg.endpoints,
      concurrency: cfg.concurrency,
      pool: POOL_SIZE,
      publish_ms: Math.round(r.publishMs),
      fanout_ms: Math.round(r.fanoutMs),
      first_claim_to_last_settle_ms: r.spanMs,
      wall_ms: Math.round(r.wallMs),
      deliveries_per_sec: Math.round(r.perSec),
      deliveries_per_sec_with_fanout: Math.round(withFanout),
      ceiling_before_per_sec: Math.round(before),
      ceiling_after_per_sec: Math.round(after),
      ceiling_per_sec: Math.round(ceiling),
      ratio_to_ceiling: round(ratio, 3),
      claim_transactions: r.claims,
      round_trips: r.roundTrips.total,
      round_trips_per_delivery: round(r.roundTrips.perDelivery, 2),
      round_trips_per_settle: round(r.roundTrips.perSettle, 2),
      avg_claim_batch: round(total / r.claims, 1),
      settle_transactions: r.settles,
      avg_settle_batch: round(total / r.settles, 1),
      lease_busy_snoozes: r.busy,
      cycle_median_ms: cycle,
      timeline_per_sec: timeline,
      writes: r.writes,
      event_loop_delay_ms: { p50: round(r.loopDelay.p50, 1), p99: round(r.loopDelay.p99, 1) },
      cpu,
      cpu_ms_per_delivery: round((cpu['main_ms']! + cpu['receiver_ms']! + cpu['postgres_ms']!) / total, 3),
    },
    rows: [
      { metric: 'database round trips per delivery (drain; statements sent)', value: r.roundTrips.perDelivery.toFixed(2), target: '—', pass: null },
      {
        metric: 'per delivery: PostgreSQL CPU µs / WAL bytes / heap tuples / index entries (ledger exact, rest at most) / state-row HOT share',
        value: [
          Math.round((cpu['postgres_ms']! * 1000) / total),
          r.writes.wal_bytes_per_delivery,
          r.writes.heap_tuples_per_delivery,
          r.writes.index_entries_per_delivery,
          r.writes.tables['delivery_states']?.hot_ratio ?? '-',
        ].join(' / '),
        target: '—',
        pass: null,
      },
      { metric: 'ceiling requests/s, after the drain', value: String(Math.round(after)), target: '—', pass: null },
      { metric: 'deliveries/s including the fan-out (fan-out + drain)', value: String(Math.round(withFanout)), target: '—', pass: null },
      {
        metric: 'deliveries/s (first claim → last settle)',
        value: String(Math.round(r.perSec)),
        target: `≥ ${targets.drainPerSec}`,
        pass: r.perSec >= targets.drainPerSec,
      },
      {
        metric: 'drain ÷ ceiling (mean of before and after)',
        value: round(ratio, 2).toFixed(2),
        target: `≥ ${targets.drainRatio}`,
        pass: ratio >= targets.drainRatio,
      },
    ],
  }
}

/** The same drain with the ledger sealer running at its default interval (chain and checkpoints on). */
export async function drainSealedScenario({ env, progress }: ScenarioContext): Promise<ScenarioOutput> {
  const r = await runDrain(env, progress, { name: 'bench_drain_sealed', events: cfg.drainEvents, sealer: true })
  shared.sealedPerSec = r.perSec
  shared.sealedWithFanoutPerSec = r.total / ((r.fanoutMs + r.spanMs) / 1000)
  return {
    metrics: {
      deliveries: r.total,
      deliveries_per_sec: Math.round(r.perSec),
      checkpoint_interval_ms: CHECKPOINT_INTERVAL_MS,
      checkpoints: r.lag.checkpoints,
      max_lag_rows: r.lag.maxRows,
      lag_samples: r.lag.samples,
      sealed_after_last_settle_ms: Math.round(r.lag.catchUpMs),
      seal_lag_p50_ms: r.lag.p50Ms,
      seal_lag_p99_ms: r.lag.p99Ms,
      cosign_lag_p50_ms: r.lag.cosign?.p50Ms ?? null,
      cosign_lag_p99_ms: r.lag.cosign?.p99Ms ?? null,
      cosigned_sizes: r.lag.cosign?.cosigned ?? 0,
      cpu: r.cpu,
    },
    rows: [
      { metric: 'deliveries/s with the chain on (sealer every 1 s, the default)', value: String(Math.round(r.perSec)), target: '—', pass: null },
      { metric: 'seal lag under drain: a row in a signed checkpoint after, p50 / p99 (ms)', value: `${r.lag.p50Ms} / ${r.lag.p99Ms}`, target: 'p99 ≤ 2,000', pass: r.lag.p99Ms <= 2000 },
      { metric: 'cosign lag, one local witness: checkpoint → cosignature kept, p50 / p99 (ms)', value: `${r.lag.cosign?.p50Ms ?? '-'} / ${r.lag.cosign?.p99Ms ?? '-'}`, target: 'seal p99 + this ≤ 3,000', pass: r.lag.cosign ? r.lag.p99Ms + r.lag.cosign.p99Ms <= 3000 : null },
      { metric: 'sealing lag behind the writers, max rows', value: String(r.lag.maxRows), target: '—', pass: null },
      { metric: 'all sealed after the last settle (ms)', value: String(Math.round(r.lag.catchUpMs)), target: '—', pass: null },
    ],
  }
}

/** Chain off again, after the chain-on drain: on ÷ off against the mean of both off drains. */
export async function drainOffScenario({ env, progress }: ScenarioContext): Promise<ScenarioOutput> {
  const r = await runDrain(env, progress, { name: 'bench_drain_plain_after', events: cfg.drainEvents })
  const off = ((shared.drainPerSec ?? NaN) + r.perSec) / 2
  const ratio = (shared.sealedPerSec ?? NaN) / off
  return {
    metrics: { deliveries: r.total, deliveries_per_sec: Math.round(r.perSec), chain_off_mean_per_sec: Math.round(off), chain_on_over_off: round(ratio, 3) },
    rows: [
      { metric: 'deliveries/s, chain off again (after the chain-on drain)', value: String(Math.round(r.perSec)), target: '—', pass: null },
      { metric: 'drain chain on ÷ off (mean of the off drains before and after)', value: round(ratio, 2).toFixed(2), target: '≥ 0.95', pass: ratio >= 0.95 },
    ],
  }
}
