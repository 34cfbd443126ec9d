/**
 * Scenario `owner-limits` (issue 24 item 2): an owner's publish limit through the real API
 * (`serve --role api`).
 *
 * 1. The limit holds under pressure: owner `limited` at 200 events/s (burst 20) is published to
 *    by 16 clients as fast as they can, ignoring Retry-After, while owner `free` (no limits)
 *    publishes beside it with 4. Figures: `limited`'s accepted events a second over a window
 *    after its burst (target: the limit ± 5 %), every refusal a 429 problem `owner_rate_limited`
 *    with a Retry-After of at least a second (target: all), `free`'s publishes all accepted, and
 *    `free`'s publish p99 beside that flood against alone (same clients) first.
 * 2. What a limit costs when it is never reached (its bucket is a row every publish of the owner
 *    updates): `limited` at 1,000,000/s, then `free`, each alone with 16 in flight: events/s,
 *    limited ÷ free.
 */
import { startBenchApi, type BenchApi } from './bench-api.js'
import { freshDatabase, type ScenarioContext, type ScenarioOutput } from './harness.js'
import { EVENT_TYPE, QUICK, cfg, targets } from './settings.js'
import { percentile, round, sleep } from './util.js'

const LIMITED = 'limited'
const FREE = 'free'
const RATE = 200
const BURST = 20
const LIMITED_CLIENTS = 16
const FREE_CLIENTS = 4
/** The burst's second is not measured: the window starts after it. */
const WARM_MS = 1_000
const WINDOW_MS = QUICK ? 2_000 : 10_000

/** What one client's answers were. */
interface Answers {
  accepted: number[]
  /** Request → answer of each accepted publish (ms). */
  acceptedMs: number[]
  refused: number
  badRefusals: string[]
  other: Map<number, number>
}

const answers = (): Answers => ({ accepted: [], acceptedMs: [], refused: 0, badRefusals: [], other: new Map() })

export async function ownerLimitsScenario({ env, progress }: ScenarioContext): Promise<ScenarioOutput> {
  const bdb = await freshDatabase(env, 'bench_owner_limits', 1)
  let api: BenchApi | null = null
  let n = 0
  /** One publish as `owner`; its answer counted in `into`. */
  const publishOne = async (owner: string, into: Answers) => {
    const i = n++
    const sentAt = performance.now()
    const res = await fetch(api!.eventsUrl, {
      method: 'POST',
      headers: api!.headersOf(owner),
      body: JSON.stringify({ type: EVENT_TYPE, subject: `booking://b${i}`, data: { booking_id: `b${i}` } }),
    })
    const text = await res.text()
    if (res.status === 202) {
      into.accepted.push(performance.now())
      into.acceptedMs.push(performance.now() - sentAt)
    }
    else if (res.status === 429) {
      into.refused++
      const retryAfter = Number(res.headers.get('retry-after'))
      const code = (JSON.parse(text) as { code?: string }).code
      const problem = res.headers.get('content-type')?.includes('application/problem+json') ?? false
      if (!(Number.isInteger(retryAfter) && retryAfter >= 1 && code === 'owner_rate_limited' && problem)) into.badRefusals.push(`Retry-After ${res.headers.get('retry-after')}, code ${code}, ${res.headers.get('content-type')}`)
    } else into.other.set(res.status, (into.other.get(res.status) ?? 0) + 1)
  }
  /** `clients` publishing as `owner` back to back until `stop` resolves. */
  const flood = (owner: string, clients: number, into: Answers, stop: Promise<void>) => {
    let running = true
    void stop.then(() => (running = false))
    return Promise.all(Array.from({ length: clients }, async () => { while (running) await publishOne(owner, into) }))
  }
  /** Events/s of `owner` alone, `events` of them with 16 in flight. */
  const publishRate = async (owner: string, events: number) => {
    const into = answers()
    const started = performance.now()
    let sent = 0
    await Promise.all(Array.from({ length: cfg.publishInFlight }, async () => { while (sent++ < events) await publishOne(owner, into) }))
    if (into.accepted.length !== events) throw new Error(`${owner}: ${events - into.accepted.length} of ${events} publishes not accepted`)
    return (events / (performance.now() - started)) * 1000
  }
  try {
    api = await startBenchApi(bdb.db, bdb.url, [LIMITED, FREE])
    await api.setOwnerLimits(LIMITED, { publish_per_second: RATE, publish_burst: BURST })

    progress.phase(`${FREE} alone, ${FREE_CLIENTS} clients`)
    const freeAlone = answers()
    await flood(FREE, FREE_CLIENTS, freeAlone, sleep(WARM_MS + WINDOW_MS / 2))

    progress.phase(`${LIMITED} limited to ${RATE}/s (burst ${BURST}) under ${LIMITED_CLIENTS} clients, ${FREE} beside it`)
    const limited = answers()
    const free = answers()
    const began = performance.now()
    const stop = sleep(WARM_MS + WINDOW_MS)
    await Promise.all([flood(LIMITED, LIMITED_CLIENTS, limited, stop), flood(FREE, FREE_CLIENTS, free, stop)])
    const from = began + WARM_MS
    const inWindow = limited.accepted.filter((at) => at >= from && at < from + WINDOW_MS).length
    const limitedPerSec = (inWindow / WINDOW_MS) * 1000
    const freePerSec = (free.accepted.length / (WARM_MS + WINDOW_MS)) * 1000
    const off = Math.abs(limitedPerSec - RATE) / RATE
    // What a neighbour hammered with refusals costs the other owner's publishes: p99, beside ÷ alone.
    const p99 = (xs: number[]) => percentile([...xs].sort((a, b) => a - b), 99)
    const freeP99Alone = p99(freeAlone.acceptedMs)
    const freeP99Beside = p99(free.acceptedMs)
    const unexpected = [...limited.other, ...free.other].map(([status, count]) => `${status}×${count}`)
    if (unexpected.length > 0) throw new Error(`answers other than 202 and 429: ${unexpected.join(', ')}`)

    progress.phase(`a limit never reached: ${LIMITED} at 1,000,000/s, then ${FREE}, ${cfg.publishEvents} events each`)
    await api.setOwnerLimits(LIMITED, { publish_per_second: 1_000_000, publish_burst: 1_000_000 })
    await publishRate(LIMITED, QUICK ? 20 : 200) // warm-up
    const limitedRate = await publishRate(LIMITED, cfg.publishEvents)
    const freeRate = await publishRate(FREE, cfg.publishEvents)
    const costRatio = limitedRate / freeRate

    const refusalsOk = limited.badRefusals.length === 0 && limited.refused > 0
    return {
      metrics: {
        limit_per_sec: RATE,
        burst: BURST,
        window_s: WINDOW_MS / 1000,
        limited_clients: LIMITED_CLIENTS,
        limited_accepted_per_sec: round(limitedPerSec, 1),
        limited_off_by: round(off, 3),
        limited_refused: limited.refused,
        refusals_without_retry_after: limited.badRefusals.length,
        ...(limited.badRefusals.length > 0 ? { first_bad_refusal: limited.badRefusals[0] } : {}),
        free_accepted_per_sec: round(freePerSec, 1),
        free_alone_accepted_per_sec: round((freeAlone.accepted.length / (WARM_MS + WINDOW_MS / 2)) * 1000, 1),
        free_p99_ms: { alone: round(freeP99Alone, 1), beside_refused_flood: round(freeP99Beside, 1) },
        free_refused: free.refused,
        unreached_limit_events_per_sec: Math.round(limitedRate),
        unlimited_events_per_sec: Math.round(freeRate),
        unreached_limit_over_unlimited: round(costRatio, 2),
      },
      rows: [
        { metric: `an owner limited to ${RATE}/s under ${LIMITED_CLIENTS} clients: accepted/s`, value: limitedPerSec.toFixed(1), target: `${RATE} ± ${targets.ownerLimitTolerance * 100} %`, pass: off <= targets.ownerLimitTolerance },
        { metric: 'its refusals: 429 owner_rate_limited with Retry-After ≥ 1 s', value: `${limited.refused - limited.badRefusals.length} of ${limited.refused}`, target: 'all', pass: refusalsOk },
        { metric: `the unlimited owner beside it (${FREE_CLIENTS} clients): accepted/s, refused`, value: `${freePerSec.toFixed(0)}, ${free.refused}`, target: '0 refused', pass: free.refused === 0 },
        { metric: `the unlimited owner's publish p99 (ms): alone → beside the refused flood`, value: `${freeP99Alone.toFixed(1)} → ${freeP99Beside.toFixed(1)}`, target: '—', pass: null },
        { metric: 'a limit never reached: publish/s ÷ unlimited (16 in flight)', value: costRatio.toFixed(2), target: '—', pass: null },
      ],
    }
  } finally {
    await api?.close()
    await bdb.close()
  }
}
