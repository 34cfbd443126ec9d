/**
 * Scenario `rate-limit` (issue 22 item 1): one endpoint with `rate_limit: { per_second: 50,
 * burst: 1 }`, a 10,000-event backlog, four dispatchers (workers) claiming it at once. The
 * figure is the arrivals per second over a 20 s window mid-drain against the limit (target
 * 50 ± 5 %), and the busiest second.
 */
import { sql } from 'kysely'
import { endpointUpdate } from '@hookledger/store'
import { systemClock } from '@hookledger/core'
import { createEndpoints, eventId, newDispatcher, newTransport, publish } from './fixtures.js'
import { freshDatabase, type ScenarioContext, type ScenarioOutput } from './harness.js'
import { OWNER, QUICK, targets } from './settings.js'
import { round, sleep, until } from './util.js'

const RATE = 50
const WORKERS = 4
const BACKLOG = QUICK ? 300 : 10_000
const WINDOW_S = QUICK ? 3 : 20
const WARM_S = QUICK ? 1 : 2

export async function rateLimitScenario({ env, progress }: ScenarioContext): Promise<ScenarioOutput> {
  const bdb = await freshDatabase(env, 'bench_rate_limit')
  const { db, url } = bdb
  const [endpoint] = await createEndpoints(env, db, [{ owner_id: OWNER, url: env.receiver.url('/paced') }])
  await db.transaction().execute((trx) =>
    endpointUpdate(trx, { owner_id: OWNER, now: systemClock.now(), actor: 'owner:bench' }, endpoint!.id, { rate_limit: { per_second: RATE, burst: 1, adaptive: false } }),
  )
  progress.phase(`${BACKLOG} events published`)
  for (let i = 0; i < BACKLOG; i++) await publish(db, OWNER, eventId())
  const transport = newTransport(env)
  const workers = Array.from({ length: WORKERS }, (_, i) => newDispatcher(env, db, url, transport, `bench-rate-${i}`))
  try {
    await env.receiver.reset(true)
    await Promise.all(workers.map((w) => w.dispatcher.start()))
    // The backlog is of deliveries: measured once every event is fanned out (a fan-out of
    // thousands of events keeps the producers busy for seconds, the paced endpoint with them).
    progress.phase('the backlog fanned out')
    await until('the backlog fanned out', 300_000, async () =>
      Number((await sql<{ n: string }>`select count(*) as n from events where fanned_out_at is null`.execute(db)).rows[0]!.n) === 0 ? true : null, 200)
    progress.phase(`${WORKERS} workers draining at ${RATE}/s: warm-up, then a ${WINDOW_S} s window`)
    await sleep(WARM_S * 1000)
    const from = performance.timeOrigin + performance.now()
    await sleep(WINDOW_S * 1000)
    const to = performance.timeOrigin + performance.now()
    await Promise.all(workers.map((w) => w.dispatcher.stop()))
    const { arrivals } = await env.receiver.dump()
    const inWindow = arrivals.map(([, , at]) => at).filter((at) => at >= from && at < to).sort((a, b) => a - b)
    const perSec = inWindow.length / ((to - from) / 1000)
    let busiest = 0
    for (let i = 0, j = 0; i < inWindow.length; i++) {
      while (inWindow[i]! - inWindow[j]! >= 1000) j++
      busiest = Math.max(busiest, i - j + 1)
    }
    const off = Math.abs(perSec - RATE) / RATE
    return {
      metrics: { rate_limit_per_sec: RATE, workers: WORKERS, backlog: BACKLOG, window_s: WINDOW_S, arrivals_per_sec: round(perSec, 2), busiest_second: busiest, off_by: round(off, 3) },
      rows: [
        { metric: `one endpoint limited to ${RATE}/s, ${WORKERS} workers: arrivals/s`, value: perSec.toFixed(1), target: `${RATE} ± ${targets.rateLimitTolerance * 100} %`, pass: off <= targets.rateLimitTolerance },
        { metric: 'its busiest second (arrivals)', value: String(busiest), target: `≤ ${RATE + 1}`, pass: busiest <= RATE + 1 },
      ],
    }
  } finally {
    await Promise.all(workers.map((w) => w.dispatcher.stop()))
    await Promise.all(workers.map((w) => w.notifier.close()))
    await transport.close()
    await bdb.close()
  }
}
