/**
 * An endpoint's rate limit as a generic cell rate algorithm (GCRA): a token bucket kept as one
 * timestamp, `rate_tat` (the theoretical arrival time), on the endpoint row beside its lease.
 * A claim is allowed when `rate_tat - tolerance <= now`; it moves `rate_tat` to
 * `max(rate_tat, now) + interval`. Whole milliseconds, rounded the same way as the queue view
 * (migration 0008's endpoint_queue_expected), so the claim and the queue head agree exactly.
 */
import type { EndpointRateLimit } from './endpoint-call-options.js'

/** What the bucket needs from an endpoint row. */
export interface RateBucket {
  readonly rate_limit: EndpointRateLimit | null
  readonly rate_tat: Date | null
  readonly rate_adapted_per_second: number | null
}

/** The rate in force: the one 429/503 answers lowered it to (adaptive), else the configured one. */
export function effectiveRatePerSecond(b: RateBucket): number | null {
  if (b.rate_limit === null) return null
  return b.rate_adapted_per_second ?? b.rate_limit.per_second
}

/** Milliseconds between two sends at the rate in force (rounded up: never faster than asked). */
export function rateIntervalMs(b: RateBucket): number | null {
  const rate = effectiveRatePerSecond(b)
  return rate === null ? null : Math.ceil(1000 / rate)
}

/** The earliest moment the bucket lets a send through (null: now, no limit or a full bucket). */
export function rateReadyAt(b: RateBucket): Date | null {
  const interval = rateIntervalMs(b)
  if (interval === null || b.rate_tat === null) return null
  return new Date(b.rate_tat.getTime() - (b.rate_limit!.burst - 1) * interval)
}

/** Whether a send at `now` stays within the limit. */
export function rateAllows(b: RateBucket, now: Date): boolean {
  const ready = rateReadyAt(b)
  return ready === null || ready.getTime() <= now.getTime()
}

/**
 * The bucket after a send at `now` (null: no limit, nothing to keep). A send a little late (by
 * less than one interval: a claim a few ms after the bucket refilled) keeps the schedule, so the
 * lateness is not lost and the endpoint gets its rate; in any window the sends stay within
 * burst + rate × window + 1. A bucket idle longer starts again from now.
 */
export function rateTatAfterSend(b: RateBucket, now: Date): Date | null {
  const interval = rateIntervalMs(b)
  if (interval === null) return null
  const t = now.getTime()
  const tat = b.rate_tat?.getTime() ?? null
  const from = tat === null || tat < t - interval ? t : tat
  return new Date(from + interval)
}

/** The lowest an adaptive rate goes: a hundredth of the configured one. */
export const ADAPTIVE_FLOOR_FRACTION = 0.01
/** After each 2xx an adapted rate grows by this fraction of itself (it doubles back in ~14 answers)… */
export const ADAPTIVE_RECOVERY_FACTOR = 1.05
/** …plus this fraction of the configured rate, so a rate near the floor recovers too. */
export const ADAPTIVE_RECOVERY_STEP = 0.01

/**
 * An adaptive rate limit (`adaptive: true`) after the receiver answered `status`: a 429 or 503
 * halves the rate in force (down to the floor); a 2xx brings an adapted rate back slowly toward
 * the configured one (null once it is there again). Undefined: no change (no adaptive limit, or
 * another answer). The value rides on the attempt's entry, so replay moves the rate as the settle did.
 */
export function adaptedRateAfter(b: RateBucket, status: number | null): number | null | undefined {
  if (b.rate_limit === null || !b.rate_limit.adaptive || status === null) return undefined
  const configured = b.rate_limit.per_second
  const current = b.rate_adapted_per_second ?? configured
  if (status === 429 || status === 503) {
    const lowered = Math.max(configured * ADAPTIVE_FLOOR_FRACTION, current / 2)
    return lowered === b.rate_adapted_per_second ? undefined : lowered
  }
  if (status >= 200 && status < 300 && b.rate_adapted_per_second !== null) {
    const raised = current * ADAPTIVE_RECOVERY_FACTOR + configured * ADAPTIVE_RECOVERY_STEP
    return raised >= configured ? null : raised
  }
  return undefined
}
