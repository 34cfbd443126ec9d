/**
 * Scenario `claim-endpoints`: one claim of 64 with 100 busy endpoints, then with 100,000
 * endpoints in all (99,900 idle, 1,000 of them soft-deleted; other tenants, no due work). The
 * claim's cost should follow the due work, not the endpoint count (growth ≤ 2×).
 */
import { bulkCreateEndpoints, createEndpoints } from './fixtures.js'
import { ClaimProbe } from './claim-probe.js'
import { freshDatabase, type ScenarioContext, type ScenarioOutput } from './harness.js'
import { OWNER, cfg, targets } from './settings.js'
import { round } from './util.js'

export async function claimEndpointsScenario({ env, progress }: ScenarioContext): Promise<ScenarioOutput> {
  const bdb = await freshDatabase(env, 'bench_claim_endpoints', 1)
  const { db } = bdb
  const busy = cfg.claimEndpoints
  const all = cfg.claimManyEndpoints
  const expect = Math.min(cfg.claimLimit, busy)
  try {
    await createEndpoints(env, db, Array.from({ length: busy }, (_, i) => ({ owner_id: OWNER, url: env.receiver.url(`/ep/${i}`) })))
    const probe = new ClaimProbe(db)
    // Enough due heads for every claim at both sizes: each claim takes one per endpoint.
    const events = cfg.claimRuns + cfg.claimManyRuns + 4
    const enqueued = await probe.enqueue(env, OWNER, events)
    progress.phase(`claiming at ${busy} endpoints`)
    const small = await probe.measure(cfg.claimRuns, expect)
    progress.phase(`creating ${(all - busy).toLocaleString('en')} idle endpoints (${cfg.claimDeletedEndpoints.toLocaleString('en')} soft-deleted) in SQL`)
    const t = performance.now()
    await bulkCreateEndpoints(env, bdb.admin, { count: all - busy, deleted: cfg.claimDeletedEndpoints, owner: 'idle', owners: 1_000, url: env.receiver.url('/idle') })
    const createMs = performance.now() - t
    progress.phase(`claiming at ${all.toLocaleString('en')} endpoints`)
    const large = await probe.measure(cfg.claimManyRuns, expect)
    const growth = large.medianMs / small.medianMs
    return {
      metrics: {
        busy_endpoints: busy,
        endpoints: all,
        idle_endpoints: all - busy,
        deleted_endpoints: cfg.claimDeletedEndpoints,
        due_enqueued: enqueued,
        limit: cfg.claimLimit,
        small_median_ms: small.medianMs,
        large_median_ms: large.medianMs,
        small_runs_ms: small.runs,
        large_runs_ms: large.runs,
        growth_factor: round(growth, 2),
        create_idle_ms: Math.round(createMs),
      },
      rows: [
        { metric: `claim ${cfg.claimLimit} @ ${busy} endpoints (median ms)`, value: small.medianMs.toFixed(2), target: '—', pass: null },
        {
          metric: `claim ${cfg.claimLimit} @ ${all.toLocaleString('en')} endpoints, ${(all - busy).toLocaleString('en')} idle (median ms)`,
          value: large.medianMs.toFixed(2),
          target: '—',
          pass: null,
        },
        {
          metric: 'claim growth factor (many endpoints ÷ 100)',
          value: round(growth, 2).toFixed(2),
          target: `≤ ${targets.claimGrowth}`,
          pass: growth <= targets.claimGrowth,
        },
      ],
    }
  } finally {
    await bdb.close()
  }
}
