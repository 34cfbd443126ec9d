/**
 * Scenario `latency`: 200 events/s for 30 s, each to one endpoint of its own tenant (50), from
 * a publisher with its own pool as the API process would have: publish → receiver arrival.
 * Scenario `latency-owners`: the same with 2,000 tenants, every one of them active within the
 * dispatcher's fair-share window — what grows in real use is the owners, and every claim weighs
 * the recent ones (core `ownerReserves`); its p99 ÷ the 50 tenants' p99 says what that costs.
 */
import { histogramBins } from './charts/svg-charts.js'
import { createEndpoints, eventId, newDispatcher, newTransport, publish, replayClean, waitCompleted } from './fixtures.js'
import { deliverySteps } from './delivery-steps.js'
import { benchDb, freshDatabase, type ScenarioContext, type ScenarioOutput } from './harness.js'
import { POOL_SIZE, QUICK, cfg, targets } from './settings.js'
import { phaseDiagnostics } from './drain-diagnostics.js'
import { shared } from './shared.js'
import { percentile, round, sleep, wall } from './util.js'

export const latencyScenario = (context: ScenarioContext) => latencyWithOwners(context, cfg.latencyEndpoints, 'bench_latency')

export async function latencyOwnersScenario(context: ScenarioContext): Promise<ScenarioOutput> {
  const out = await latencyWithOwners(context, cfg.latencyOwners, 'bench_latency_owners')
  const p99 = Number(out.metrics['p99_ms'])
  const few = shared.latencyP99Ms
  const ratio = few === undefined ? null : p99 / few
  return {
    metrics: { ...out.metrics, ...(ratio === null ? {} : { p99_over_50_owners: round(ratio, 2) }) },
    rows: [
      ...out.rows.map((r) => ({ ...r, metric: `${cfg.latencyOwners.toLocaleString('en')} owners: ${r.metric}`, target: '—', pass: null })),
      ...(ratio === null ? [] : [{
        metric: `p99 at ${cfg.latencyOwners.toLocaleString('en')} owners ÷ at ${cfg.latencyEndpoints}`,
        value: ratio.toFixed(2),
        target: `≤ ${targets.latencyOwnersP99Ratio}`,
        pass: ratio <= targets.latencyOwnersP99Ratio,
      }]),
    ],
  }
}

/** `n` tenants, one endpoint each: each event goes to exactly one endpoint. */
async function latencyWithOwners({ env, progress }: ScenarioContext, n: number, database: string): Promise<ScenarioOutput> {
  const bdb = await freshDatabase(env, database)
  const { db, url } = bdb
  // The scenario's name (its profile's, its replay's): bench_latency_owners → latency-owners.
  const scenario = database.replace('bench_', '').replace('_', '-')
  // The publisher is the application: its own small pool, as the API process would have.
  const pubDb = benchDb(url, POOL_SIZE)
  // One endpoint per tenant, so each event goes to exactly one endpoint: 200 events/s is 200
  // deliveries/s, 4/s per endpoint at 50 tenants.
  progress.phase(`${n.toLocaleString('en')} tenants, one endpoint each`)
  await createEndpoints(
    env,
    db,
    Array.from({ length: n }, (_, i) => ({
      owner_id: `tenant_${i}`,
      url: env.receiver.url(`/ep/${i}`),
    })),
  )
  const transport = newTransport(env)
  const { dispatcher, notifier } = newDispatcher(env, db, url, transport, 'bench-latency')
  const publishedAt = new Map<string, number>()
  const publishErrors: unknown[] = []
  const run = async (prefix: string, seconds: number, record: boolean): Promise<number> => {
    const total = Math.max(1, Math.round(cfg.latencyRate * seconds))
    const interval = 1000 / cfg.latencyRate
    const pending: Promise<void>[] = []
    const t0 = performance.now()
    for (let k = 0; k < total; k++) {
      const due = t0 + k * interval
      const wait = due - performance.now()
      if (wait > 1) await sleep(wait)
      const id = `${prefix}_${eventId()}`
      if (record) publishedAt.set(id, wall())
      pending.push(
        publish(pubDb, `tenant_${k % n}`, id).catch((err) => void publishErrors.push(err)),
      )
    }
    await Promise.all(pending)
    return total
  }
  try {
    await dispatcher.start()
    const skew = await env.receiver.clockSkew()
    // Warm-up (not recorded): sockets, JIT, caches.
    await env.receiver.reset()
    progress.phase('warm-up')
    const warm = await run('warm', QUICK ? 0.5 : 2, false)
    await env.receiver.waitFor(warm, 30_000)
    await env.receiver.reset(true)
    // --stats, --profile: what the database and this process (the dispatcher and the publisher run here) spend the measured phase on.
    const diagnostics = await phaseDiagnostics(bdb.admin, scenario)
    const sendStarted = performance.now()
    progress.phase(`${cfg.latencyRate} events/s for ${cfg.latencySeconds} s`, async () => `${(await env.receiver.call('count'))['count']} arrived`)
    const total = await run('lat', cfg.latencySeconds, true)
    const sendSeconds = (performance.now() - sendStarted) / 1000
    if (publishErrors.length > 0) throw publishErrors[0]
    await env.receiver.waitFor(total, 60_000)
    const { arrivals } = await env.receiver.dump()
    await waitCompleted(db, total + warm, 30_000)
    await diagnostics.stop()
    await dispatcher.stop()
    const seen = new Set<string>()
    let duplicates = 0
    const latencies: number[] = []
    for (const [id, , at] of arrivals) {
      if (seen.has(id)) duplicates++
      seen.add(id)
      const p = publishedAt.get(id)
      if (p !== undefined) latencies.push(at - p)
    }
    if (latencies.length !== total)
      throw new Error(`${latencies.length} arrivals matched of ${total} published`)
    if (duplicates > 0) throw new Error(`${duplicates} duplicate arrivals`)
    latencies.sort((a, b) => a - b)
    const p50 = percentile(latencies, 50)
    const p99 = percentile(latencies, 99)
    const max = latencies[latencies.length - 1]!
    const steps = await deliverySteps(db, null, [...publishedAt.keys()])
    const replay = await replayClean(db, scenario)
    if (n === cfg.latencyEndpoints) shared.latencyP99Ms = p99
    return {
      metrics: {
        events: total,
        endpoints: n,
        rate_per_sec: cfg.latencyRate,
        achieved_rate_per_sec: round(total / sendSeconds, 1),
        seconds: cfg.latencySeconds,
        p50_ms: round(p50),
        p90_ms: round(percentile(latencies, 90)),
        p99_ms: round(p99),
        max_ms: round(max),
        min_ms: round(latencies[0]!),
        steps_p50_ms: steps.p50_ms,
        steps_p99_ms: steps.p99_ms,
        // For the latency chart: 40 bins up to the 99.5th percentile.
        histogram: histogramBins(latencies, 40, 0.995),
        clock_skew_ms: skew.skewMs,
        ipc_rtt_ms: skew.rttMs,
        replay_differences: replay.differencesTotal,
      },
      rows: [
        {
          metric: 'publish → arrival p50 (ms)',
          value: round(p50).toFixed(1),
          target: `≤ ${targets.latencyP50}`,
          pass: p50 <= targets.latencyP50,
        },
        {
          metric: 'publish → arrival p99 (ms)',
          value: round(p99).toFixed(1),
          target: `≤ ${targets.latencyP99}`,
          pass: p99 <= targets.latencyP99,
        },
        {
          metric: 'publish → arrival max (ms)',
          value: round(max).toFixed(1),
          target: '—',
          pass: null,
        },
      ],
    }
  } finally {
    await dispatcher.stop()
    await notifier.close()
    await transport.close()
    await pubDb.destroy()
    await bdb.close()
  }
}
