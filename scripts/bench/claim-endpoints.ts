/**
 * Scenario `claim-endpoints`: one claim of 64 with 100 busy endpoints, against the same with
 * 1,000,000 endpoints in all (999,900 idle, 10,000 of them soft-deleted; 1,000 other tenants,
 * no due work). The claim's cost should follow the due work, not the endpoint count (growth
 * ≤ 1.25×, issue 21). The two sizes are two databases of one cluster, claimed in turn (small,
 * large, small, …), so the machine's drift over the run lands on both alike: one claim is
 * 10–25 ms, and on a shared 2-core machine measured back to back the sizes' medians moved by
 * ±20 % from run to run.
 */
import { bulkCreateEndpoints, createEndpoints } from './fixtures.js'
import { ClaimProbe } from './claim-probe.js'
import { freshDatabase, type BenchDb, type ScenarioContext, type ScenarioOutput } from './harness.js'
import { OWNER, cfg, targets } from './settings.js'
import { median, round } from './util.js'

export async function claimEndpointsScenario({ env, progress }: ScenarioContext): Promise<ScenarioOutput> {
  const busy = cfg.claimEndpoints
  const all = cfg.claimManyEndpoints
  const runs = cfg.claimManyRuns
  const expect = Math.min(cfg.claimLimit, busy)
  const opened: BenchDb[] = []
  try {
    // Both sizes get the same busy endpoints and due work; each claim takes one head per endpoint.
    const events = 2 * runs + 4
    const probes: ClaimProbe[] = []
    let enqueued = 0
    for (const name of ['bench_claim_endpoints_small', 'bench_claim_endpoints_large']) {
      const bdb = await freshDatabase(env, name, 1)
      opened.push(bdb)
      progress.phase(`${name}: ${busy} busy endpoints, ${events} events`)
      await createEndpoints(env, bdb.db, Array.from({ length: busy }, (_, i) => ({ owner_id: OWNER, url: env.receiver.url(`/ep/${i}`) })))
      const probe = new ClaimProbe(bdb.db)
      enqueued = await probe.enqueue(env, OWNER, events)
      probes.push(probe)
    }
    const [small, large] = probes as [ClaimProbe, ClaimProbe]
    progress.phase(`creating ${(all - busy).toLocaleString('en')} idle endpoints (${cfg.claimDeletedEndpoints.toLocaleString('en')} soft-deleted) in SQL`)
    const t = performance.now()
    await bulkCreateEndpoints(env, opened[1]!.admin, { count: all - busy, deleted: cfg.claimDeletedEndpoints, owner: 'idle', owners: 1_000, url: env.receiver.url('/idle') })
    const createMs = performance.now() - t
    progress.phase(`claiming at ${busy} and at ${all.toLocaleString('en')} endpoints in turn`)
    // One warm-up claim each, then the timed pairs.
    await small.timedClaim(expect)
    await large.timedClaim(expect)
    const smallRuns: number[] = []
    const largeRuns: number[] = []
    for (let i = 0; i < runs; i++) {
      smallRuns.push(await small.timedClaim(expect))
      largeRuns.push(await large.timedClaim(expect))
    }
    const smallMs = median(smallRuns)
    const largeMs = median(largeRuns)
    const growth = largeMs / smallMs
    return {
      metrics: {
        busy_endpoints: busy,
        endpoints: all,
        idle_endpoints: all - busy,
        deleted_endpoints: cfg.claimDeletedEndpoints,
        due_enqueued: enqueued,
        limit: cfg.claimLimit,
        small_median_ms: smallMs,
        large_median_ms: largeMs,
        small_runs_ms: smallRuns,
        large_runs_ms: largeRuns,
        growth_factor: round(growth, 2),
        create_idle_ms: Math.round(createMs),
      },
      rows: [
        { metric: `claim ${cfg.claimLimit} @ ${busy} endpoints (median ms)`, value: smallMs.toFixed(2), target: '—', pass: null },
        {
          metric: `claim ${cfg.claimLimit} @ ${all.toLocaleString('en')} endpoints, ${(all - busy).toLocaleString('en')} idle (median ms)`,
          value: largeMs.toFixed(2),
          target: '—',
          pass: null,
        },
        {
          metric: 'claim growth factor (many endpoints ÷ 100, claimed in turn)',
          value: round(growth, 2).toFixed(2),
          target: `≤ ${targets.claimEndpointsGrowth}`,
          pass: round(growth, 2) <= targets.claimEndpointsGrowth,
        },
      ],
    }
  } finally {
    for (const bdb of opened) await bdb.close()
  }
}
