import type { AttemptOutcomeName } from '../model/ledger-entry.js'

/**
 * Endpoint health: an endpoint's attempts over a window, counted per time bucket and outcome,
 * with the success rate and the latency percentiles. Pure: the store reads the attempts
 * (`delivery.attempted` entries of the window), this turns them into the answer.
 */

/** The windows `webhooks.stats` answers for, and how each is cut. */
export const HEALTH_WINDOWS = {
  /** 24 hourly buckets. */
  '24h': { span_ms: 24 * 3_600_000, bucket_ms: 3_600_000 },
  /** 28 buckets of 6 hours. */
  '7d': { span_ms: 7 * 24 * 3_600_000, bucket_ms: 6 * 3_600_000 },
} as const

export type HealthWindow = keyof typeof HEALTH_WINDOWS

export const HEALTH_OUTCOMES: readonly AttemptOutcomeName[] = [
  'completed',
  'retry_scheduled',
  'snoozed',
  'discarded',
  'interrupted',
]

export type OutcomeCounts = Record<AttemptOutcomeName, number>

/** One attempt as the health math needs it. */
export interface HealthAttempt {
  /** When the attempt was recorded (its ledger entry). */
  readonly at: Date
  readonly outcome: AttemptOutcomeName
  readonly duration_ms: number
}

export interface HealthBucket {
  readonly start: Date
  readonly end: Date
  readonly attempts: number
  readonly outcomes: OutcomeCounts
  /** completed / attempts; null with no attempts. */
  readonly success_rate: number | null
}

export interface EndpointHealth {
  readonly window: HealthWindow
  /** The first bucket's start. */
  readonly since: Date
  /** Now: the last bucket is the one in progress. */
  readonly until: Date
  readonly bucket_ms: number
  readonly buckets: readonly HealthBucket[]
  readonly attempts: number
  readonly outcomes: OutcomeCounts
  readonly success_rate: number | null
  readonly latency_ms: { readonly p50: number | null; readonly p95: number | null }
}

/**
 * The bucket starts of `window` at `now`: aligned to multiples of the bucket length since the
 * epoch (UTC hours; 00, 06, 12, 18 h), the last one holding `now`, as many as fit the span.
 */
export function healthBuckets(window: HealthWindow, now: Date): { start: Date; end: Date }[] {
  const { span_ms, bucket_ms } = HEALTH_WINDOWS[window]
  const count = span_ms / bucket_ms
  const lastStart = Math.floor(now.getTime() / bucket_ms) * bucket_ms
  return Array.from({ length: count }, (_, i) => {
    const start = lastStart - (count - 1 - i) * bucket_ms
    return { start: new Date(start), end: new Date(start + bucket_ms) }
  })
}

/**
 * The nearest-rank percentile (the smallest value with at least p% of the values at or below
 * it) of `values`; null when there are none. `p` in (0, 100].
 */
export function percentile(values: readonly number[], p: number): number | null {
  if (values.length === 0) return null
  if (!(p > 0 && p <= 100)) throw new RangeError(`percentile: p must be in (0, 100], got ${p}`)
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.ceil((p / 100) * sorted.length) - 1]!
}

const noOutcomes = (): OutcomeCounts => ({ completed: 0, retry_scheduled: 0, snoozed: 0, discarded: 0, interrupted: 0 })

const successRate = (outcomes: OutcomeCounts, attempts: number): number | null =>
  attempts === 0 ? null : outcomes.completed / attempts

/** The health of an endpoint from its attempts; attempts outside the window are ignored. */
export function endpointHealth(attempts: readonly HealthAttempt[], window: HealthWindow, now: Date): EndpointHealth {
  const { bucket_ms } = HEALTH_WINDOWS[window]
  const cuts = healthBuckets(window, now)
  const since = cuts[0]!.start.getTime()
  const counts = cuts.map(() => ({ attempts: 0, outcomes: noOutcomes() }))
  const total = noOutcomes()
  const durations: number[] = []
  for (const a of attempts) {
    const t = a.at.getTime()
    if (t < since || t > now.getTime()) continue
    const c = counts[Math.floor((t - since) / bucket_ms)]!
    c.attempts++
    c.outcomes[a.outcome]++
    total[a.outcome]++
    durations.push(a.duration_ms)
  }
  return {
    window,
    since: cuts[0]!.start,
    until: now,
    bucket_ms,
    buckets: cuts.map((cut, i) => ({ ...cut, ...counts[i]!, success_rate: successRate(counts[i]!.outcomes, counts[i]!.attempts) })),
    attempts: durations.length,
    outcomes: total,
    success_rate: successRate(total, durations.length),
    latency_ms: { p50: percentile(durations, 50), p95: percentile(durations, 95) },
  }
}
