/**
 * The ledger entries of one event's fan-out, for the fan-out loop and for `webhooks.send_test`
 * alike: a `fanout.decided` naming what matched and what scope denied (and whether the event is
 * internal, so nothing was considered), then a `delivery.enqueued` for each matched endpoint —
 * due now, or after the cool-down while that endpoint is failing.
 */
import { COOL_DOWN_MS } from '../delivery/delivery-decider.js'
import { deliveryIdFor } from '../delivery/delivery-id.js'
import { iso, type LedgerEntry } from '../model/ledger-entry.js'
import type { EndpointRow } from '../model/projections.js'

export interface FanoutDecision {
  readonly event: { readonly owner_id: string; readonly id: string; readonly type: string }
  readonly matched: readonly Pick<EndpointRow, 'id' | 'failing_since'>[]
  readonly denied: readonly { readonly endpoint_id: string; readonly reason: string }[]
  /** False for an event the catalog keeps internal: decided, never delivered. */
  readonly visible: boolean
}

export function fanoutEntries(d: FanoutDecision, ctx: { now: Date; actor: string }): LedgerEntry[] {
  const { event } = d
  const base = { occurred_at: ctx.now, owner_id: event.owner_id, event_id: event.id, actor: ctx.actor }
  const entries: LedgerEntry[] = [
    {
      ...base,
      kind: 'fanout.decided',
      endpoint_id: null,
      delivery_id: null,
      payload: { type: event.type, matched: d.matched.map((e) => e.id), denied: [...d.denied], ...(d.visible ? {} : { skipped_internal: true }) },
    },
  ]
  for (const ep of d.matched) {
    // A failing receiver is not hit at once by new work.
    const coolDown = ep.failing_since !== null
    entries.push({
      ...base,
      kind: 'delivery.enqueued',
      endpoint_id: ep.id,
      delivery_id: deliveryIdFor(ep.id, event.id),
      payload: {
        event_type: event.type,
        next_attempt_at: iso(coolDown ? new Date(ctx.now.getTime() + COOL_DOWN_MS) : ctx.now),
        cool_down: coolDown,
      },
    })
  }
  return entries
}
