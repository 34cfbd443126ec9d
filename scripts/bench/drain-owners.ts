/**
 * Scenario `drain-owners`: 20,000 deliveries (10 events to each of 2,000 endpoints) drained
 * with every endpoint its own owner's, against the same endpoints all of one owner, in the same
 * run (goal ≥ 0.9×). What grows in real use is the owners: every claim weighs the ready ones
 * and the recent ones (fair share, core `fairShareOrder` and `ownerReserves`), and a claim's
 * owner walk descends once per owner with work.
 */
import { runDrain } from './drain-run.js'
import type { ScenarioContext, ScenarioOutput } from './harness.js'
import { cfg, targets } from './settings.js'
import { round } from './util.js'

export async function drainOwnersScenario({ env, progress }: ScenarioContext): Promise<ScenarioOutput> {
  const endpoints = cfg.ownersDrainEndpoints
  const one = await runDrain(env, progress, { name: 'bench_drain_one_owner', events: cfg.ownersDrainEvents, endpoints })
  const many = await runDrain(env, progress, { name: 'bench_drain_owners', events: cfg.ownersDrainEvents, endpoints, owners: endpoints })
  const ratio = many.perSec / one.perSec
  const n = endpoints.toLocaleString('en')
  return {
    metrics: {
      deliveries: one.total,
      endpoints,
      owners: endpoints,
      one_owner_per_sec: Math.round(one.perSec),
      owners_per_sec: Math.round(many.perSec),
      owners_over_one: round(ratio, 3),
      one_owner_claims: one.claims,
      owners_claims: many.claims,
      one_owner_cpu: one.cpu,
      owners_cpu: many.cpu,
    },
    rows: [
      { metric: `deliveries/s, ${n} endpoints of one owner`, value: String(Math.round(one.perSec)), target: '—', pass: null },
      { metric: `deliveries/s, ${n} endpoints of ${n} owners`, value: String(Math.round(many.perSec)), target: '—', pass: null },
      { metric: `drain across ${n} owners ÷ one owner`, value: round(ratio, 2).toFixed(2), target: `≥ ${targets.ownersDrainRatio}`, pass: ratio >= targets.ownersDrainRatio },
    ],
  }
}
