/**
 * Why a waiting delivery waits, and until when: a pure reading of the delivery row, the entry
 * that last scheduled it and its endpoint's lease.
 */
import { MAX_ATTEMPTS } from './backoff.js'
import type { DeliveryRow, EndpointRow } from '../model/projections.js'
import { rateReadyAt, type RateBucket } from '../endpoint/rate-limit.js'

export type WaitingReason =
  | { readonly kind: 'backoff'; readonly until: Date; readonly attempt: number; readonly of: number }
  | { readonly kind: 'retry_after'; readonly until: Date; readonly retry_after_ms: number }
  | { readonly kind: 'cool_down'; readonly until: Date }
  | { readonly kind: 'lease_busy'; readonly until: Date }
  /** The endpoint's rate limit: its bucket lets the next request through at `until`. */
  | { readonly kind: 'rate_limited'; readonly until: Date }
  /** A strict-ordered endpoint: an earlier delivery (`blocked_by`) must complete or be discarded first. */
  | { readonly kind: 'ordering'; readonly until: null; readonly blocked_by: string }
  /** Due: waiting for a free worker slot. */
  | { readonly kind: 'due'; readonly until: null }
  /** Scheduled for later by something else (a redelivery or enqueue due later). */
  | { readonly kind: 'scheduled'; readonly until: Date }

/** The ledger entry that last set the delivery's `next_attempt_at`. */
export type SchedulingEntry =
  | { readonly kind: 'delivery.retry_scheduled' }
  | { readonly kind: 'delivery.snoozed'; readonly payload: { readonly retry_after_ms: number } }
  | { readonly kind: 'delivery.lease_busy'; readonly payload?: { readonly reason?: 'rate_limited' } }
  | { readonly kind: 'delivery.enqueued'; readonly payload: { readonly cool_down: boolean } }
  | { readonly kind: 'delivery.redelivered' }
  | { readonly kind: 'delivery.cool_down_released' }

export function waitingReason(
  delivery: Pick<DeliveryRow, 'id' | 'state' | 'attempts' | 'next_attempt_at'>,
  scheduledBy: SchedulingEntry | null,
  endpoint: (Pick<EndpointRow, 'busy_until' | 'busy_delivery_id'> & Partial<RateBucket>) | null,
  now: Date,
  /** On a strict-ordered endpoint, the earlier live delivery it waits for (core strictBlocker). */
  blockedBy: string | null = null,
): WaitingReason | null {
  if (delivery.state !== 'pending' && delivery.state !== 'retryable') return null
  const next = delivery.next_attempt_at
  if (next === null) return null
  // Strict order first: whatever its own time, it goes only after the one before it.
  if (blockedBy !== null) return { kind: 'ordering', until: null, blocked_by: blockedBy }
  const busy = endpoint?.busy_until ?? null
  // Another delivery of the endpoint holds its lease past this one's time: it waits for that.
  if (busy !== null && busy > now && busy >= next && endpoint?.busy_delivery_id !== delivery.id) {
    return { kind: 'lease_busy', until: busy }
  }
  // Its endpoint's rate limit lets the next request through only later than this one's time.
  const bucket = endpoint?.rate_limit ? rateReadyAt({ rate_limit: endpoint.rate_limit, rate_tat: endpoint.rate_tat ?? null, rate_adapted_per_second: endpoint.rate_adapted_per_second ?? null }) : null
  if (bucket !== null && bucket > now && bucket >= next) return { kind: 'rate_limited', until: bucket }
  if (next <= now) return { kind: 'due', until: null }
  switch (scheduledBy?.kind) {
    case 'delivery.retry_scheduled':
      return { kind: 'backoff', until: next, attempt: delivery.attempts, of: MAX_ATTEMPTS }
    case 'delivery.snoozed':
      return { kind: 'retry_after', until: next, retry_after_ms: scheduledBy.payload.retry_after_ms }
    case 'delivery.lease_busy':
      return scheduledBy.payload?.reason === 'rate_limited' ? { kind: 'rate_limited', until: next } : { kind: 'lease_busy', until: next }
    case 'delivery.enqueued':
      return scheduledBy.payload.cool_down ? { kind: 'cool_down', until: next } : { kind: 'scheduled', until: next }
    default:
      return delivery.state === 'retryable'
        ? { kind: 'backoff', until: next, attempt: delivery.attempts, of: MAX_ATTEMPTS }
        : { kind: 'scheduled', until: next }
  }
}
