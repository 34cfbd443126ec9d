/**
 * Scenario `fanout`: one event to 1,000 endpoints through the running dispatcher, publish →
 * deliveries committed (the dispatcher's fan-out reporting its committed batch: its NOTIFY goes
 * out only for deliveries its own claim left, so it is not a signal here); each run drains
 * before the next.
 */
import { sql } from 'kysely'
import { silentObserver } from '@hookledger/worker'
import { createEndpoints, eventId, newDispatcher, newTransport, publish, replayClean, waitCompleted } from './fixtures.js'
import { benchDb, freshDatabase, type ScenarioContext, type ScenarioOutput } from './harness.js'
import { OWNER, cfg, targets } from './settings.js'
import { median, round, withTimeout } from './util.js'

export async function fanoutScenario({ env }: ScenarioContext): Promise<ScenarioOutput> {
  const bdb = await freshDatabase(env, 'bench_fanout')
  const { db, url } = bdb
  const n = cfg.fanoutEndpoints
  const pubDb = benchDb(url, 2)
  await createEndpoints(
    env,
    db,
    Array.from({ length: n }, (_, i) => ({ owner_id: OWNER, url: env.receiver.url(`/ep/${i}`) })),
  )
  const transport = newTransport(env)
  let onEnqueued: (() => void) | null = null
  // Called once the fan-out's transaction (deliveries + ledger, and its claim) has committed.
  const observer = { ...silentObserver, fannedOut: (_events: number, enqueued: number) => void (enqueued > 0 && onEnqueued?.()) }
  const { dispatcher, notifier } = newDispatcher(env, db, url, transport, 'bench-fanout', undefined, observer)
  try {
    await dispatcher.start()
    await env.receiver.reset()
    const runs: number[] = []
    for (let r = 0; r < cfg.fanoutRuns; r++) {
      const id = eventId()
      const enqueued = new Promise<number>(
        (resolve) => (onEnqueued = () => resolve(performance.now())),
      )
      const t0 = performance.now()
      await publish(pubDb, OWNER, id)
      const at = await withTimeout(enqueued, 30_000, 'the fan-out committed')
      onEnqueued = null
      runs.push(round(at - t0, 1))
      const count = Number(
        (
          await sql<{
            n: string
          }>`select count(*) as n from deliveries where event_id = ${id}`.execute(db)
        ).rows[0]!.n,
      )
      if (count !== n)
        throw new Error(`fan-out of ${id} enqueued ${count} deliveries, expected ${n}`)
      // Let this event's deliveries drain before the next run, so runs do not overlap.
      await env.receiver.waitFor((r + 1) * n, 60_000)
      await waitCompleted(db, (r + 1) * n, 30_000)
    }
    await dispatcher.stop()
    const replay = await replayClean(db, 'fan-out')
    const med = median(runs)
    const max = Math.max(...runs)
    return {
      metrics: {
        endpoints: n,
        runs_ms: runs,
        median_ms: med,
        max_ms: max,
        replay_differences: replay.differencesTotal,
      },
      rows: [
        {
          metric: `fan-out 1 event → ${n.toLocaleString('en')} deliveries enqueued (median ms)`,
          value: med.toFixed(1),
          target: `≤ ${targets.fanoutMs}`,
          pass: med <= targets.fanoutMs,
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
