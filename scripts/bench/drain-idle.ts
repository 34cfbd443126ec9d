/**
 * Scenario `drain-idle`: 10,000 deliveries (100 events × 100 busy endpoints) drained with
 * 10,000 idle endpoints of other tenants beside them, against the same drain without, in the
 * same run (goal ≥ 0.9×): idle endpoints must cost the producer's claims nothing.
 */
import { runDrain } from './drain-run.js'
import type { ScenarioContext, ScenarioOutput } from './harness.js'
import { cfg, targets } from './settings.js'
import { round } from './util.js'

export async function drainIdleScenario({ env, progress }: ScenarioContext): Promise<ScenarioOutput> {
  const without = await runDrain(env, progress, { name: 'bench_drain_no_idle', events: cfg.idleDrainEvents })
  const withIdle = await runDrain(env, progress, { name: 'bench_drain_idle', events: cfg.idleDrainEvents, idleEndpoints: cfg.idleEndpoints })
  const ratio = withIdle.perSec / without.perSec
  return {
    metrics: {
      deliveries: without.total,
      busy_endpoints: cfg.endpoints,
      idle_endpoints: cfg.idleEndpoints,
      without_idle_per_sec: Math.round(without.perSec),
      with_idle_per_sec: Math.round(withIdle.perSec),
      with_over_without: round(ratio, 3),
      without_claims: without.claims,
      with_claims: withIdle.claims,
      without_cpu: without.cpu,
      with_cpu: withIdle.cpu,
    },
    rows: [
      { metric: `deliveries/s, ${cfg.endpoints} endpoints alone`, value: String(Math.round(without.perSec)), target: '—', pass: null },
      {
        metric: `deliveries/s, ${cfg.endpoints} endpoints + ${cfg.idleEndpoints.toLocaleString('en')} idle`,
        value: String(Math.round(withIdle.perSec)),
        target: '—',
        pass: null,
      },
      {
        metric: 'drain with idle ÷ without',
        value: round(ratio, 2).toFixed(2),
        target: `≥ ${targets.idleDrainRatio}`,
        pass: ratio >= targets.idleDrainRatio,
      },
    ],
  }
}
