/**
 * Scenario `fairness` (issue 24 item 1): a quiet owner publishing 20 events/s to 5 fast endpoints,
 * publish → arrival, alone and then while another owner floods (200,000 due deliveries to 2,000
 * endpoints that answer in 200 ms), one dispatcher at the service's default concurrency. The
 * figure is the quiet owner's p99 with the flood ÷ alone (target ≤ 1.5).
 */
import pg from 'pg'
import { sql } from 'kysely'
import { createDb } from '@hookledger/store'
import { CONCURRENCY_DEFAULT } from '@hookledger/worker'
import { createEndpoints, eventId, newDispatcher, newTransport, publish, replayClean } from './fixtures.js'
import { freshDatabase, type ScenarioContext, type ScenarioOutput } from './harness.js'
import { POOL_SIZE, cfg, targets } from './settings.js'
import { percentile, round, sleep, until, wall } from './util.js'

export async function fairnessScenario({ env, progress }: ScenarioContext): Promise<ScenarioOutput> {
  const bdb = await freshDatabase(env, 'bench_fairness')
  const { db, url } = bdb
  const pubDb = createDb(new pg.Pool({ connectionString: url, max: POOL_SIZE }))
  const quietEndpoints = 5
  progress.phase(`${cfg.fairFloodEndpoints} flood endpoints, ${quietEndpoints} quiet ones`)
  await createEndpoints(env, db, Array.from({ length: cfg.fairFloodEndpoints }, (_, i) => ({ owner_id: 'flood', url: env.receiver.url(`/slow/${cfg.fairSlowMs}/flood/${i}`) })))
  await createEndpoints(env, db, Array.from({ length: quietEndpoints }, (_, i) => ({ owner_id: 'quiet', url: env.receiver.url(`/quiet/${i}`) })))
  const transport = newTransport(env)
  const { dispatcher, notifier } = newDispatcher(env, db, url, transport, 'bench-fairness', CONCURRENCY_DEFAULT)

  /** The quiet owner publishes `rate`/s for `seconds`; each delivery's publish → arrival. */
  const quietLatencies = async (label: string): Promise<number[]> => {
    await env.receiver.reset(true)
    const total = Math.max(1, Math.round(cfg.fairQuietRate * cfg.fairSeconds))
    const publishedAt = new Map<string, number>()
    const t0 = performance.now()
    const pending: Promise<void>[] = []
    for (let k = 0; k < total; k++) {
      const wait = t0 + (k * 1000) / cfg.fairQuietRate - performance.now()
      if (wait > 1) await sleep(wait)
      const id = `${label}_${eventId()}`
      publishedAt.set(id, wall())
      pending.push(publish(pubDb, 'quiet', id))
    }
    await Promise.all(pending)
    const latencies: number[] = []
    await until(`${label}: ${total * quietEndpoints} quiet arrivals`, 60_000, async () => {
      const { arrivals } = await env.receiver.dump()
      const quiet = arrivals.filter(([, path]) => path.startsWith('/quiet/'))
      if (quiet.length < total * quietEndpoints) return null
      for (const [id, , at] of quiet) latencies.push(at - publishedAt.get(id)!)
      return true
    }, 100)
    return latencies.sort((a, b) => a - b)
  }

  try {
    await dispatcher.start()
    progress.phase('quiet owner alone (warm-up, then measured)')
    await quietLatencies('warm')
    const alone = await quietLatencies('alone')
    progress.phase(`flood: ${cfg.fairFloodEvents * cfg.fairFloodEndpoints} deliveries fanned out`)
    for (let i = 0; i < cfg.fairFloodEvents; i++) await publish(pubDb, 'flood', `flood_${eventId()}`)
    await until('the flood fanned out', 600_000, async () =>
      Number((await sql<{ n: string }>`select count(*) as n from events where fanned_out_at is null`.execute(db)).rows[0]!.n) === 0 ? true : null, 200)
    // Every slot but the few kept free for the quiet owner (active lately: its headroom).
    await until('the slots taken by the flood', 60_000, async () => (dispatcher.inflight >= Math.min(CONCURRENCY_DEFAULT, cfg.fairFloodEndpoints) - quietEndpoints ? true : null))
    progress.phase('quiet owner during the flood')
    const flooded = await quietLatencies('flood')
    const floodDue = Number((await sql<{ n: string }>`select count(*) as n from delivery_states where state in ('pending', 'retryable')`.execute(db)).rows[0]!.n)
    await dispatcher.stop()
    const replay = await replayClean(db, 'fairness')
    const p99Alone = percentile(alone, 99)
    const p99Flood = percentile(flooded, 99)
    const ratio = p99Flood / p99Alone
    return {
      metrics: {
        flood_endpoints: cfg.fairFloodEndpoints,
        flood_deliveries: cfg.fairFloodEvents * cfg.fairFloodEndpoints,
        flood_still_due_at_end: floodDue,
        flood_answer_ms: cfg.fairSlowMs,
        quiet_rate_per_sec: cfg.fairQuietRate,
        quiet_deliveries_each_phase: flooded.length,
        alone_p50_ms: round(percentile(alone, 50)),
        alone_p99_ms: round(p99Alone),
        flood_p50_ms: round(percentile(flooded, 50)),
        flood_p99_ms: round(p99Flood),
        p99_ratio: round(ratio, 2),
        replay_differences: replay.differencesTotal,
      },
      rows: [
        { metric: 'quiet owner p99 alone (ms)', value: round(p99Alone).toFixed(1), target: '—', pass: null },
        { metric: 'quiet owner p99 during a flood (ms)', value: round(p99Flood).toFixed(1), target: '—', pass: null },
        { metric: 'quiet owner p99: flood ÷ alone', value: ratio.toFixed(2), target: `≤ ${targets.fairnessP99Ratio}`, pass: ratio <= targets.fairnessP99Ratio },
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
