/**
 * When a failing endpoint recovers, what its failing cool-down still holds back goes now: a new
 * delivery enqueued while the endpoint was failing waits COOL_DOWN_MS before its first attempt,
 * which protects a receiver that is down — not one that has just answered 2xx. Pure: the store
 * reads the endpoint's waiting rows and writes what this returns.
 */
import { deliveryEntryBase, type DecisionContext } from './delivery-decider.js'
import { iso, type LedgerEntryOf } from '../model/ledger-entry.js'
import type { DeliveryRow } from '../model/projections.js'

/**
 * Held back by the cool-down (or a 2 s busy-lease snooze, as harmless to end early): pending,
 * never attempted in this run, never snoozed by the receiver, and not yet due. A Retry-After
 * snooze is the receiver's own request and is kept; so is a backoff (retryable).
 */
export function heldByCoolDown(delivery: Pick<DeliveryRow, 'state' | 'attempts' | 'snoozes' | 'next_attempt_at'>, now: Date): boolean {
  return (
    delivery.state === 'pending' &&
    delivery.attempts === 0 &&
    delivery.snoozes === 0 &&
    delivery.next_attempt_at !== null &&
    delivery.next_attempt_at.getTime() > now.getTime()
  )
}

/** The entries that make each held-back delivery of a recovered endpoint due now. */
export function releaseCoolDown(deliveries: readonly DeliveryRow[], ctx: DecisionContext): LedgerEntryOf<'delivery.cool_down_released'>[] {
  return deliveries
    .filter((d) => heldByCoolDown(d, ctx.now))
    .map((d) => ({
      kind: 'delivery.cool_down_released',
      ...deliveryEntryBase(d, ctx),
      payload: { next_attempt_at: iso(ctx.now), held_until: iso(d.next_attempt_at!) },
    }))
}
