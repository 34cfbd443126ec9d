/**
 * What a claim does with one due delivery, given its endpoint as it is now (locked) and whether
 * its event still exists: discard it (endpoint deleted or disabled, event pruned), snooze it
 * without spending an attempt (another claim holds the endpoint's lease, or its rate limit's
 * bucket is empty: then until the bucket lets it through), or claim it — take the delivery and
 * the endpoint's lease for `leaseMs` from now, and with a rate limit one interval of its bucket
 * (`rate_tat` in the claim's entry, so replay moves the bucket exactly as the claim did). Pure: the store reads and locks the rows
 * and writes what this returns.
 */
import { DeliveryOutcome, decideDelivery, deliveryEntryBase, type DecisionContext } from './delivery-decider.js'
import { iso, type LedgerEntry } from '../model/ledger-entry.js'
import type { DeliveryRow, EndpointRow } from '../model/projections.js'
import { rateAllows, rateReadyAt, rateTatAfterSend } from '../endpoint/rate-limit.js'

export interface ClaimContext extends DecisionContext {
  /** How long the claim leases the endpoint, from `now` (the entry's `lease_ms`). */
  readonly leaseMs: number
  /** This claim already leased the endpoint to an earlier delivery (one in flight per endpoint). */
  readonly leasedByThisClaim: boolean
}

export interface ClaimDecision {
  readonly claimed: boolean
  readonly entries: LedgerEntry[]
}

export function decideClaim(delivery: DeliveryRow, endpoint: EndpointRow, eventExists: boolean, ctx: ClaimContext): ClaimDecision {
  const settled = (outcome: DeliveryOutcome): ClaimDecision => ({ claimed: false, entries: decideDelivery(delivery, outcome, ctx) })
  if (endpoint.deleted_at !== null) return settled(DeliveryOutcome.discarded('endpoint_deleted'))
  if (!endpoint.enabled) return settled(DeliveryOutcome.discarded('endpoint_disabled', null, { detail: endpoint.disabled_reason ?? '' }))
  if (!eventExists) return settled(DeliveryOutcome.discarded('event_pruned'))
  const busy = ctx.leasedByThisClaim || (endpoint.busy_until !== null && endpoint.busy_until.getTime() > ctx.now.getTime())
  if (busy) return settled(DeliveryOutcome.snoozedForBusy())
  if (!rateAllows(endpoint, ctx.now)) {
    // Waiting for the bucket spends no attempt: the delivery is due again when it refills.
    const until = rateReadyAt(endpoint)!
    return { claimed: false, entries: [{ kind: 'delivery.lease_busy', ...deliveryEntryBase(delivery, ctx), payload: { next_attempt_at: iso(until), reason: 'rate_limited' } }] }
  }
  const tat = rateTatAfterSend(endpoint, ctx.now)
  return {
    claimed: true,
    entries: [
      {
        kind: 'delivery.claimed',
        ...deliveryEntryBase(delivery, ctx),
        // The worker is the entry's actor (ledger format 4: not repeated in the payload); the
        // lease is its length from the entry's time (format 5: 17 bytes fewer than its end).
        payload: { lease_ms: ctx.leaseMs, ...(tat !== null ? { rate_tat: iso(tat) } : {}) },
      },
    ],
  }
}
