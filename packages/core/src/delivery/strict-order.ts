/**
 * Strict ordering per endpoint (issue 22 item 5, `ordering: "strict"`): a delivery goes only when
 * every earlier delivery to its endpoint — earlier by the event's `occurred_at`, then its id — is
 * completed or discarded. So an endpoint's deliveries form one line, and its head is the earliest
 * live one (pending, retryable or running): it alone may be claimed, and only once it is due; a
 * failing head blocks the rest until it completes or is discarded. A delivery whose event was
 * pruned sorts first (it is discarded at its claim, unblocking the rest).
 *
 * The claim applies the same order in SQL (store: delivery-next.ts, and the queue head's view,
 * migration 0011); this is the rule as the rest of the code and its tests read it. The claim
 * also counts its owner's events not fanned out yet as on the line (migration 0017): a delivery
 * after one of them waits, as behind a head, until its fan-out commits.
 */
import type { DeliveryState } from '../model/projections.js'

/** A delivery as the order sees it. */
export interface OrderedDelivery {
  readonly id: string
  readonly state: DeliveryState
  readonly next_attempt_at: Date | null
  /** The event's `occurred_at` (null: the event was pruned). */
  readonly occurred_at: Date | null
  readonly event_id: string
}

const LIVE: ReadonlySet<DeliveryState> = new Set<DeliveryState>(['pending', 'retryable', 'running'])

/** Whether `a` comes before `b` on their endpoint's line. */
export function strictlyBefore(a: OrderedDelivery, b: OrderedDelivery): boolean {
  const ta = a.occurred_at?.getTime() ?? -Infinity
  const tb = b.occurred_at?.getTime() ?? -Infinity
  if (ta !== tb) return ta < tb
  if (a.event_id !== b.event_id) return a.event_id < b.event_id
  return a.id < b.id
}

/** The endpoint's head: its earliest live delivery (null when none is live). */
export function strictHead(deliveries: readonly OrderedDelivery[]): OrderedDelivery | null {
  let head: OrderedDelivery | null = null
  for (const d of deliveries) if (LIVE.has(d.state) && (head === null || strictlyBefore(d, head))) head = d
  return head
}

/** What holds `delivery` back on a strict endpoint: the head, when that is another delivery. */
export function strictBlocker(delivery: OrderedDelivery, deliveries: readonly OrderedDelivery[]): OrderedDelivery | null {
  const head = strictHead([delivery, ...deliveries.filter((d) => d.id !== delivery.id)])
  return head !== null && head.id !== delivery.id ? head : null
}

/** Whether the endpoint's head may be claimed at `now`: it is waiting (not running) and due. */
export function strictHeadClaimable(head: OrderedDelivery | null, now: Date): boolean {
  return head !== null && head.state !== 'running' && head.next_attempt_at !== null && head.next_attempt_at.getTime() <= now.getTime()
}
