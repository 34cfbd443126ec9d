/**
 * Scenario `fairness` (issue 24 item 1): a quiet owner publishing 20 events/s to 5 fast endpoints
 * (each event to one of them),
 * publish → arrival, alone and then while another owner floods (200,000 due deliveries to 2,000
 * endpoints that answer in 200 ms), one dispatcher at the service's default concurrency. The quiet
 * owner publishes throughout; the figure is its p99 once the flood is fanned out ÷ alone
 * (target ≤ 1.5). Its latency while the flood is being fanned out is reported beside it.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { sql } from 'kysely'
import { headroomMost } from '@hookledger/core'
import { loadConfig } from '@hookledger/server'
import { createEndpoints, eventId, newDispatcher, newTransport, publish, replayClean } from './fixtures.js'
import { deliverySteps } from './delivery-steps.js'
import { phaseDiagnostics } from './drain-diagnostics.js'
import { benchDb, freshDatabase, type ScenarioContext, type ScenarioOutput } from './harness.js'
import { POOL_SIZE, cfg, targets } from './settings.js'
import { percentile, round, sleep, until, wall } from './util.js'

export const fairnessScenario = (context: ScenarioContext) => fairnessWith(context, 1, 'bench_fairness')

/**
 * Scenario `fairness-owners`: the same flood, the quiet side 2,000 owners of one endpoint each
 * sharing the 20 events/s (each owner sends once in 100 s; ~200 are active within the fair-share
 * window at a time). Their headroom must not hold the flood to its share of one slot: it keeps
 * at most half the slots (core `reservedForOthers`).
 */
export const fairnessOwnersScenario = (context: ScenarioContext) => fairnessWith(context, cfg.fairQuietOwners, 'bench_fairness_owners')

async function fairnessWith({ env, progress }: ScenarioContext, quietOwners: number, database: string): Promise<ScenarioOutput> {
  const bdb = await freshDatabase(env, database)
  const { db, url } = bdb
  const pubDb = benchDb(url, POOL_SIZE)
  const many = quietOwners > 1
  const quietEndpoints = many ? quietOwners : 5
  progress.phase(`${cfg.fairFloodEndpoints} flood endpoints, ${quietEndpoints} quiet ones${many ? ` of ${quietOwners} owners` : ''}`)
  await createEndpoints(env, db, Array.from({ length: cfg.fairFloodEndpoints }, (_, i) => ({ owner_id: 'flood', url: env.receiver.url(`/slow/${cfg.fairSlowMs}/flood/${i}`) })))
  // Each quiet endpoint takes one of five types and the quiet owner's events cycle through them:
  // 20 deliveries/s in all, 4/s an endpoint (a quiet owner). With every event to all five (100/s,
  // 20/s an endpoint) each endpoint needs a cycle under 50 ms: see performance.md.
  const QUIET_TYPES = ['booking.created', 'booking.cancelled', 'booking.rescheduled', 'code.issued', 'code.revoked']
  const quietOwner = (k: number) => (many ? `quiet_${k % quietOwners}` : 'quiet')
  const quietOwnerIds = [...new Set(Array.from({ length: quietEndpoints }, (_, i) => quietOwner(i)))]
  await createEndpoints(env, db, Array.from({ length: quietEndpoints }, (_, i) => ({ owner_id: quietOwner(i), url: env.receiver.url(`/quiet/${i}`), event_types: many ? ['*'] : [QUIET_TYPES[i]!] })))
  const transport = newTransport(env)
  // The service's default, as `serve` sizes it from this machine's cores.
  const concurrency = loadConfig({}).HOOKLEDGER_CONCURRENCY
  const { dispatcher, notifier } = newDispatcher(env, db, url, transport, 'bench-fairness', concurrency)

  /**
   * The quiet owner publishes `rate`/s from start to end, as the issue has it (B keeps
   * publishing while A floods); each event is labelled with the phase it was published in.
   */
  let phase = 'warm'
  const publishedAt = new Map<string, { at: number; phase: string }>()
  let publishing = true
  const pending: Promise<void>[] = []
  const quietLoop = (async () => {
    const t0 = performance.now()
    for (let k = 0; publishing; k++) {
      const wait = t0 + (k * 1000) / cfg.fairQuietRate - performance.now()
      if (wait > 1) await sleep(wait)
      const id = `quiet_${eventId()}`
      publishedAt.set(id, { at: wall(), phase })
      pending.push(publish(pubDb, quietOwner(k), id, QUIET_TYPES[k % QUIET_TYPES.length]))
    }
  })()
  /** Publish → arrival of every quiet delivery published in `label`. */
  const latenciesOf = async (label: string): Promise<number[]> => {
    const ids = new Set([...publishedAt].filter(([, p]) => p.phase === label).map(([id]) => id))
    const latencies: number[] = []
    await until(`${label}: ${ids.size} quiet arrivals`, 60_000, async () => {
      const { arrivals } = await env.receiver.dump()
      const quiet = arrivals.filter(([id, path]) => path.startsWith('/quiet/') && ids.has(id))
      if (quiet.length < ids.size) return null
      latencies.length = 0
      for (const [id, , at] of quiet) latencies.push(at - publishedAt.get(id)!.at)
      return true
    }, 250)
    return latencies.sort((a, b) => a - b)
  }

  try {
    await env.receiver.reset(true)
    await dispatcher.start()
    progress.phase('quiet owner alone (warm-up, then measured)')
    await sleep(cfg.fairSeconds * 500)
    phase = 'alone'
    await sleep(cfg.fairSeconds * 1000)
    phase = 'flood-start'
    progress.phase(`flood: ${cfg.fairFloodEvents * cfg.fairFloodEndpoints} deliveries fanned out (the quiet owner publishing on)`)
    for (let i = 0; i < cfg.fairFloodEvents; i++) await publish(pubDb, 'flood', `flood_${eventId()}`)
    await until('the flood fanned out', 600_000, async () =>
      Number((await sql<{ n: string }>`select count(*) as n from events where owner_id = 'flood' and fanned_out_at is null`.execute(db)).rows[0]!.n) === 0 ? true : null, 200)
    // Every slot but the few kept free for the quiet owner (active: its headroom); the many
    // quiet owners' headroom is at most half the slots.
    const floodHolds = Math.min(concurrency, cfg.fairFloodEndpoints) - (many ? headroomMost(concurrency) : quietEndpoints)
    await until('the slots taken by the flood', 60_000, async () => (dispatcher.inflight >= floodHolds ? true : null))
    // What the quiet owner queued while the flood was fanned out drains first (reported above as
    // the fan-out's figure); the flood's figure is the steady state that follows.
    phase = 'flood-settling'
    await until('the quiet owner caught up', 120_000, async () =>
      Number((await sql<{ n: string }>`select count(*) as n from deliveries where owner_id = any(${quietOwnerIds}::text[]) and state <> 'completed'`.execute(db)).rows[0]!.n) < 10 ? true : null, 200)
    progress.phase('quiet owner during the flood')
    phase = 'flood'
    // --stats, --profile: what the database and this process (the dispatcher runs here) spend the flood's steady state on.
    const diagnostics = await phaseDiagnostics(bdb.admin, many ? 'fairness-owners-flood' : 'fairness-flood')
    // The process's own share of the wait: its event loop.
    const loopDelay = monitorEventLoopDelay({ resolution: 1 })
    loopDelay.enable()
    // What the flood gets meanwhile (a share that protects the quiet owner is paid for here).
    const floodDone = async () => Number((await sql<{ n: string }>`select count(*) as n from deliveries where owner_id = 'flood' and state = 'completed'`.execute(db)).rows[0]!.n)
    const floodBefore = { n: await floodDone(), at: performance.now() }
    await sleep(cfg.fairSeconds * 1000)
    const floodPerSec = ((await floodDone()) - floodBefore.n) / ((performance.now() - floodBefore.at) / 1000)
    loopDelay.disable()
    await diagnostics.stop()
    publishing = false
    await quietLoop
    await Promise.all(pending)
    const alone = await latenciesOf('alone')
    const flooded = await latenciesOf('flood')
    // While the flood is being fanned out (100,000 deliveries a fan-out transaction): reported, not judged.
    const fanningOut = await latenciesOf('flood-start')
    // Where the quiet owner's time goes during the flood, from the ledger's own timestamps:
    // publish → enqueued (the fan-out), enqueued → claimed (waiting for a slot), claimed → attempt.
    const floodIds = [...publishedAt].filter(([, p]) => p.phase === 'flood').map(([id]) => id)
    const steps = await deliverySteps(db, many ? null : 'quiet', floodIds)
    const aloneSteps = await deliverySteps(db, many ? null : 'quiet', [...publishedAt].filter(([, p]) => p.phase === 'alone').map(([id]) => id))
    const floodDue = Number((await sql<{ n: string }>`select count(*) as n from delivery_states where next_attempt_at is not null and state in ('pending', 'retryable')`.execute(db)).rows[0]!.n)
    await dispatcher.stop()
    const replay = await replayClean(db, many ? 'fairness-owners' : 'fairness')
    const p99Alone = percentile(alone, 99)
    const p99Flood = percentile(flooded, 99)
    const ratio = p99Flood / p99Alone
    return {
      metrics: {
        concurrency,
        quiet_owners: quietOwners,
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
        during_flood_fanout_p50_ms: round(percentile(fanningOut, 50)),
        during_flood_fanout_p99_ms: round(percentile(fanningOut, 99)),
        p99_ratio: round(ratio, 2),
        alone_steps_p50_ms: aloneSteps.p50_ms,
        alone_steps_p99_ms: aloneSteps.p99_ms,
        flood_steps_p50_ms: steps.p50_ms,
        flood_steps_p99_ms: steps.p99_ms,
        flood_deliveries_per_sec: Math.round(floodPerSec),
        flood_event_loop_delay_ms: { p50: round(loopDelay.percentile(50) / 1e6), p99: round(loopDelay.percentile(99) / 1e6) },
        replay_differences: replay.differencesTotal,
      },
      rows: [
        { metric: 'quiet owner p99 alone (ms)', value: round(p99Alone).toFixed(1), target: '—', pass: null },
        { metric: 'quiet owner p99 during a flood (ms)', value: round(p99Flood).toFixed(1), target: '—', pass: null },
        { metric: 'the flood meanwhile (deliveries/s)', value: String(Math.round(floodPerSec)), target: '—', pass: null },
        { metric: 'quiet owner p99: flood ÷ alone', value: ratio.toFixed(2), target: `≤ ${targets.fairnessP99Ratio}`, pass: ratio <= targets.fairnessP99Ratio },
        { metric: 'quiet owner p99 while the flood is fanned out (ms)', value: round(percentile(fanningOut, 99)).toFixed(1), target: '—', pass: null },
      ],
    }
  } finally {
    // A failed phase leaves the quiet owners publishing: they stop before their pool goes.
    publishing = false
    await quietLoop.catch(() => {})
    await Promise.allSettled(pending)
    await dispatcher.stop()
    await notifier.close()
    await transport.close()
    await pubDb.destroy()
    await bdb.close()
  }
}
