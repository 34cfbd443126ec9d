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

/** The bucket after a send at `now` (null: no limit, nothing to keep). */
export function rateTatAfterSend(b: RateBucket, now: Date): Date | null {
  const interval = rateIntervalMs(b)
  if (interval === null) return null
  const from = b.rate_tat === null ? now.getTime() : Math.max(b.rate_tat.getTime(), now.getTime())
  return new Date(from + interval)
}
