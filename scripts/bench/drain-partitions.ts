/**
 * Scenario `drain-partitions`: the same drain with 10 ledger partitions and with 300. No
 * statement of the write path may grow with the number of partitions (the projection guards
 * before the one-door migration probed each one: 8–12 ms a write at 304). Goal ≥ 0.9×.
 */
import { runDrain } from './drain-run.js'
import type { ScenarioContext, ScenarioOutput } from './harness.js'
import { cfg, targets } from './settings.js'
import { round } from './util.js'

export async function drainPartitionsScenario({ env, progress }: ScenarioContext): Promise<ScenarioOutput> {
  const few = await runDrain(env, progress, { name: 'bench_drain_partitions_10', events: cfg.idleDrainEvents, partitions: 10 })
  const many = await runDrain(env, progress, { name: 'bench_drain_partitions_300', events: cfg.idleDrainEvents, partitions: 300 })
  const ratio = many.perSec / few.perSec
  return {
    metrics: {
      deliveries: few.total,
      partitions_10_per_sec: Math.round(few.perSec),
      partitions_300_per_sec: Math.round(many.perSec),
      ratio_300_over_10: round(ratio, 3),
      round_trips_per_settle_10: round(few.roundTrips.perSettle, 2),
      round_trips_per_settle_300: round(many.roundTrips.perSettle, 2),
    },
    rows: [
      { metric: 'deliveries/s, 10 ledger partitions', value: String(Math.round(few.perSec)), target: '—', pass: null },
      { metric: 'deliveries/s, 300 ledger partitions', value: String(Math.round(many.perSec)), target: '—', pass: null },
      { metric: 'drain at 300 partitions ÷ 10', value: round(ratio, 2).toFixed(2), target: `≥ ${targets.partitionsDrainRatio}`, pass: ratio >= targets.partitionsDrainRatio },
    ],
  }
}
