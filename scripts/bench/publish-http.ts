/**
 * Scenario `publish-http`: events/s through the real API — the server's own `startService`
 * with `role: 'api'` (what `serve --role api` runs: its pool, auth, validation, the publish
 * transaction) on a loopback port, `POST /api/events` with a publish token, 16 requests in
 * flight over keep-alive connections. Publish only stores the event (the outbox); fan-out is
 * the worker's.
 */
import { createEndpoints } from './fixtures.js'
import { percentile, round } from './util.js'
import { startBenchApi, type BenchApi } from './bench-api.js'
import { freshDatabase, type ScenarioContext, type ScenarioOutput } from './harness.js'
import { EVENT_TYPE, OWNER, QUICK, cfg } from './settings.js'

export async function publishHttpScenario({ env, progress }: ScenarioContext): Promise<ScenarioOutput> {
  const bdb = await freshDatabase(env, 'bench_publish_http', 1)
  let api: BenchApi | null = null
  try {
    await createEndpoints(env, bdb.db, Array.from({ length: cfg.endpoints }, (_, i) => ({ owner_id: OWNER, url: env.receiver.url(`/ep/${i}`) })))
    api = await startBenchApi(bdb.db, bdb.url, [OWNER])
    const url = api.eventsUrl
    const headers = api.headersOf(OWNER)
    let sent = 0
    let failed = ''
    const latencies: number[] = []
    const post = async () => {
      const i = sent++
      const t0 = performance.now()
      const res = await fetch(url, {
        method: 'POST',
        headers,
        body: JSON.stringify({ type: EVENT_TYPE, subject: `booking://b${i}`, data: { booking_id: `b${i}` } }),
      })
      await res.arrayBuffer()
      latencies.push(performance.now() - t0)
      if (res.status !== 202) failed ||= `POST /api/events answered ${res.status}`
    }
    const drive = async (total: number) => {
      const target = sent + total
      await Promise.all(Array.from({ length: cfg.publishInFlight }, async () => { while (sent < target) await post() }))
    }
    await drive(QUICK ? 20 : 200) // warm-up: connections, JIT, the pool
    progress.phase(`${cfg.publishEvents} events, ${cfg.publishInFlight} in flight`, () => `${sent} sent`)
    env.cpu.start()
    const started = performance.now()
    await drive(cfg.publishEvents)
    const ms = performance.now() - started
    const cpu = env.cpu.stop()
    const measured = latencies.slice(-cfg.publishEvents).sort((a, b) => a - b)
    if (failed) throw new Error(failed)
    const perSec = (cfg.publishEvents / ms) * 1000
    return {
      metrics: { events: cfg.publishEvents, in_flight: cfg.publishInFlight, ms: Math.round(ms), events_per_sec: Math.round(perSec), api_pool: 4, cpu,
        cpu_ms_per_event: round((cpu['main_ms']! + cpu['postgres_ms']!) / cfg.publishEvents, 2),
        request_ms: { p50: round(percentile(measured, 50), 1), p99: round(percentile(measured, 99), 1) } },
      rows: [{ metric: `publish over HTTP: events/s (${cfg.publishInFlight} in flight, serve --role api)`, value: String(Math.round(perSec)), target: '—', pass: null }],
    }
  } finally {
    await api?.close()
    await bdb.close()
  }
}
