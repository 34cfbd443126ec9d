/**
 * The ledger entry of one event's fan-out, for the fan-out loop and for `webhooks.send_test`
 * alike: one `fanout.decided` naming what matched and what scope denied (and whether the event is
 * internal, so nothing was considered). In ledger format 3 it is also the enqueue of each matched
 * endpoint's delivery — due now, or after the cool-down while that endpoint is failing
 * (fanout-enqueues.ts): one ledger row a fan-out, not one more a delivery.
 */
import { COOL_DOWN_MS } from '../delivery/delivery-decider.js'
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
  // A failing receiver is not hit at once by new work.
  const cooling = d.matched.filter((ep) => ep.failing_since !== null).map((ep) => ep.id)
  return [
    {
      occurred_at: ctx.now,
      owner_id: event.owner_id,
      event_id: event.id,
      actor: ctx.actor,
      kind: 'fanout.decided',
      endpoint_id: null,
      delivery_id: null,
      payload: {
        type: event.type,
        matched: d.matched.map((e) => e.id),
        denied: [...d.denied],
        ...(d.visible ? {} : { skipped_internal: true }),
        enqueues: true,
        ...(cooling.length > 0 ? { cool_down: { endpoints: cooling, until: iso(new Date(ctx.now.getTime() + COOL_DOWN_MS)) } } : {}),
      },
    },
  ]
}
