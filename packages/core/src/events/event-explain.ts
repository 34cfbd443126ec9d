/**
 * "Why did endpoint X (not) get event E?": a pure verdict per endpoint from the event's
 * `fanout.decided` entry, the endpoint as it was at that moment (its own entries folded up to
 * the decision's position) and the delivery, if one was made.
 */
import { matchesAny } from './event-glob.js'
import type { DeliveryState, EndpointRow } from '../model/projections.js'

export type ExplainVerdict =
  | { readonly verdict: DeliveryState; readonly delivery_id: string; readonly retired: boolean }
  | { readonly verdict: 'not_subscribed'; readonly event_types: string[] }
  | { readonly verdict: 'scope_denied'; readonly reason: string }
  | { readonly verdict: 'endpoint_disabled'; readonly reason: string | null }
  | { readonly verdict: 'endpoint_deleted' }
  | { readonly verdict: 'created_after_event' }
  | { readonly verdict: 'not_fanned_out_yet' }
  /** The type's exposure was `internal` when the fan-out decided: recorded, never delivered, to anyone. */
  | { readonly verdict: 'internal_event'; readonly reason: string }
  /** Matched, but no delivery is known any more (purged or not yet visible). */
  | { readonly verdict: 'matched'; readonly delivery_id: string }
  /** Subscribed and enabled, yet not chosen: a `webhook.test` for another endpoint. */
  | { readonly verdict: 'not_addressed' }

export interface FanoutVerdictInput {
  readonly type: string
  readonly matched: readonly string[]
  readonly denied: readonly { readonly endpoint_id: string; readonly reason: string }[]
  readonly skipped_internal?: boolean | undefined
}

export interface ExplainEndpointFacts {
  readonly id: string
  /** The endpoint as it was when the fan-out decided (null: it did not exist yet). */
  readonly at_decision: Pick<EndpointRow, 'enabled' | 'deleted_at' | 'event_types' | 'disabled_reason'> | null
  /** Its delivery of this event, live or read back from the ledger. */
  readonly delivery: { readonly id: string; readonly state: DeliveryState; readonly retired: boolean } | null
  /** Its delivery's id for this event (derived from the pair). */
  readonly delivery_id: string
}

export function explainVerdict(decision: FanoutVerdictInput | null, endpoint: ExplainEndpointFacts): ExplainVerdict {
  if (endpoint.delivery) {
    return { verdict: endpoint.delivery.state, delivery_id: endpoint.delivery.id, retired: endpoint.delivery.retired }
  }
  if (decision === null) return { verdict: 'not_fanned_out_yet' }
  if (decision.skipped_internal) {
    return { verdict: 'internal_event', reason: `event type "${decision.type}" had exposure internal when it was fanned out: no endpoint receives it (declare it with exposure webhook to deliver new ones)` }
  }
  if (decision.matched.includes(endpoint.id)) return { verdict: 'matched', delivery_id: endpoint.delivery_id }
  const denied = decision.denied.find((d) => d.endpoint_id === endpoint.id)
  if (denied) return { verdict: 'scope_denied', reason: denied.reason }
  const at = endpoint.at_decision
  if (at === null) return { verdict: 'created_after_event' }
  if (at.deleted_at !== null) return { verdict: 'endpoint_deleted' }
  if (!at.enabled) return { verdict: 'endpoint_disabled', reason: at.disabled_reason }
  if (!matchesAny(at.event_types, decision.type)) return { verdict: 'not_subscribed', event_types: [...at.event_types] }
  return { verdict: 'not_addressed' }
}
