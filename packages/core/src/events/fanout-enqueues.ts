/**
 * Ledger format 3: a `fanout.decided` entry with `enqueues` is also the enqueue of one delivery
 * of its event to each endpoint it matched — the `delivery.enqueued` entries it implies, which
 * the fold applies (projection-set.ts) and replay, explain and receipts read back where a
 * ledger in formats 1 and 2 had a row each. An implied enqueue makes the delivery only if the pair has
 * none yet (`by_fanout`), as the fan-out keeps an existing delivery.
 */
import { deliveryIdFor } from '../delivery/delivery-id.js'
import type { LedgerEntry, LedgerEntryOf } from '../model/ledger-entry.js'

/** The `delivery.enqueued` entries a format-3 `fanout.decided` implies, in its matched order; none for any other entry. */
export function impliedEnqueues(e: LedgerEntry): LedgerEntryOf<'delivery.enqueued'>[] {
  if (!enqueuesDeliveries(e)) return []
  const cooling = new Set(e.payload.cool_down?.endpoints ?? [])
  return e.payload.matched.map((endpointId) => implied(e, endpointId, cooling.has(endpointId)))
}

/** The enqueue a format-3 `fanout.decided` implies for one endpoint, if it matched it. */
export function impliedEnqueueOf(e: LedgerEntry, endpointId: string): LedgerEntryOf<'delivery.enqueued'> | null {
  if (!enqueuesDeliveries(e) || !e.payload.matched.includes(endpointId)) return null
  return implied(e, endpointId, e.payload.cool_down?.endpoints.includes(endpointId) ?? false)
}

function enqueuesDeliveries(e: LedgerEntry): e is LedgerEntryOf<'fanout.decided'> & { event_id: string } {
  return e.kind === 'fanout.decided' && e.payload.enqueues === true && e.event_id !== null
}

function implied(e: LedgerEntryOf<'fanout.decided'> & { event_id: string }, endpoint_id: string, cool_down: boolean): LedgerEntryOf<'delivery.enqueued'> {
  return {
    occurred_at: e.occurred_at,
    owner_id: e.owner_id,
    event_id: e.event_id,
    actor: e.actor,
    kind: 'delivery.enqueued',
    endpoint_id,
    delivery_id: deliveryIdFor(endpoint_id, e.event_id),
    payload: { event_type: e.payload.type, next_attempt_at: cool_down ? e.payload.cool_down!.until : e.occurred_at.toISOString(), cool_down, by_fanout: true },
  }
}
