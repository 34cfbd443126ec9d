/**
 * `webhooks.recover`: what one endpoint should get, now, of an event it did not receive. Pure:
 * the store reads the facts (the event, its `fanout.decided` entry, the endpoint as it was then,
 * its delivery) and asks the fan-out's own rules (catalog subscription, scope) before calling
 * this, so a recover never sends what the fan-out would refuse today.
 */
import { COOL_DOWN_MS } from '../delivery/delivery-decider.js'
import { deliveryIdFor } from '../delivery/delivery-id.js'
import { iso, type LedgerEntry } from '../model/ledger-entry.js'
import type { DeliveryState, EndpointRow } from '../model/projections.js'
import { explainVerdict, type FanoutVerdictInput } from './event-explain.js'

/** Longest window one recover looks at: the default event retention (older events are mostly pruned). */
export const RECOVER_WINDOW_MAX_MS = 30 * 24 * 3_600_000
/** Events looked at per call by default, and at most (the answer's `next_cursor` continues). */
export const RECOVER_BATCH_DEFAULT = 200
export const RECOVER_BATCH_MAX = 1000

/** Why an event is not recovered (besides already being delivered or in flight). */
export const RECOVER_SKIP_REASONS = [
  'event_pruned',
  'not_fanned_out_yet',
  'internal_event',
  'not_subscribed',
  'scope_denied',
  'delivery_retired',
] as const
export type RecoverSkipReason = (typeof RECOVER_SKIP_REASONS)[number]

/** Why the endpoint missed an event it is now owed: the lineage, read from the fan-out's decision. */
export const RECOVER_MISSED_REASONS = [
  'discarded',
  'endpoint_disabled',
  'not_subscribed',
  'scope_denied',
  'created_after_event',
  'endpoint_deleted',
  'not_addressed',
  'internal_event',
  /** The decision names it matched, yet no delivery was ever made (should not happen; kept honest). */
  'matched',
  /** No `fanout.decided` entry is left to say (dropped by ledger retention). */
  'no_decision',
] as const
export type RecoverMissedReason = (typeof RECOVER_MISSED_REASONS)[number]

export interface RecoverFacts {
  readonly endpoint_id: string
  readonly event: { readonly type: string; readonly fanned_out: boolean }
  /** The catalog's exposure now: an internal type is delivered to no one. */
  readonly visible: boolean
  /** The fan-out's subscription rule now (the catalog's `subscribes`; `webhook.test` only to its target). */
  readonly subscribed: boolean
  /** The fan-out's scope decision now. */
  readonly scope: { readonly admitted: true } | { readonly admitted: false; readonly reason: string }
  /** This endpoint's delivery of the event: live, retired (only in the ledger), or none. */
  readonly delivery: { readonly state: DeliveryState; readonly retired: false } | { readonly retired: true } | null
  /** The event's `fanout.decided` entry, if the ledger still holds it. */
  readonly decision: FanoutVerdictInput | null
  /** The endpoint as it was when the fan-out decided (null: it did not exist yet). */
  readonly at_decision: Pick<EndpointRow, 'enabled' | 'deleted_at' | 'event_types' | 'disabled_reason'> | null
}

export type RecoverVerdict =
  | { readonly action: 'new_delivery' | 'new_run'; readonly missed: RecoverMissedReason }
  | { readonly action: 'none'; readonly reason: 'delivered' | 'in_flight' }
  | { readonly action: 'skip'; readonly reason: RecoverSkipReason }

/** The rules in order: the fan-out's refusals first, then what the endpoint already has. */
export function recoverVerdict(f: RecoverFacts): RecoverVerdict {
  // The fan-out has not decided it yet: it will, on the endpoint as it is now.
  if (!f.event.fanned_out) return { action: 'skip', reason: 'not_fanned_out_yet' }
  if (!f.visible) return { action: 'skip', reason: 'internal_event' }
  if (!f.subscribed) return { action: 'skip', reason: 'not_subscribed' }
  if (!f.scope.admitted) return { action: 'skip', reason: 'scope_denied' }
  const d = f.delivery
  if (d !== null) {
    // A retired delivery's id cannot start over at run 1, and its row is gone to add a run to.
    if (d.retired) return { action: 'skip', reason: 'delivery_retired' }
    if (d.state === 'completed') return { action: 'none', reason: 'delivered' }
    if (d.state === 'discarded') return { action: 'new_run', missed: 'discarded' }
    return { action: 'none', reason: 'in_flight' }
  }
  return { action: 'new_delivery', missed: missedReason(f) }
}

function missedReason(f: RecoverFacts): RecoverMissedReason {
  if (f.decision === null) return 'no_decision'
  const v = explainVerdict(f.decision, { id: f.endpoint_id, at_decision: f.at_decision, delivery: null, delivery_id: '' })
  switch (v.verdict) {
    case 'not_subscribed':
    case 'scope_denied':
    case 'endpoint_disabled':
    case 'endpoint_deleted':
    case 'created_after_event':
    case 'not_addressed':
    case 'internal_event':
    case 'matched':
      return v.verdict
    default:
      return 'no_decision'
  }
}

/** Recorded on the entry a recover appends: the window asked for and why the event was missed. */
export interface RecoveredMark {
  readonly since: string
  readonly until: string
  readonly missed: RecoverMissedReason
}

/**
 * The entry that recovers one event for one endpoint: a `delivery.enqueued` (as the fan-out's,
 * with its cool-down while the endpoint is failing) or, for a discarded delivery, a
 * `delivery.redelivered` (as `deliveries.redeliver`'s: the previous run and its attempts). Both
 * carry `recovered`, so the ledger says this was a recovery, of which window, and why.
 */
export function recoverEntry(
  input: {
    readonly owner_id: string
    readonly endpoint: Pick<EndpointRow, 'id' | 'failing_since'>
    readonly event: { readonly id: string; readonly type: string }
    /** The discarded delivery a new run is for; absent for a new delivery. */
    readonly discarded?: { readonly id: string; readonly run: number; readonly attempts: number }
    readonly recovered: RecoveredMark
  },
  ctx: { readonly now: Date; readonly actor: string },
): LedgerEntry {
  const { endpoint, event, discarded, recovered } = input
  const base = { occurred_at: ctx.now, owner_id: input.owner_id, endpoint_id: endpoint.id, event_id: event.id, actor: ctx.actor }
  if (discarded) {
    return {
      ...base,
      kind: 'delivery.redelivered',
      delivery_id: discarded.id,
      payload: { run: discarded.run + 1, next_attempt_at: iso(ctx.now), previous_run: discarded.run, previous_attempts: discarded.attempts, recovered: { ...recovered } },
    }
  }
  // As the fan-out: a failing receiver is not hit at once by new work.
  const coolDown = endpoint.failing_since !== null
  return {
    ...base,
    kind: 'delivery.enqueued',
    delivery_id: deliveryIdFor(endpoint.id, event.id),
    payload: {
      event_type: event.type,
      next_attempt_at: iso(coolDown ? new Date(ctx.now.getTime() + COOL_DOWN_MS) : ctx.now),
      cool_down: coolDown,
      recovered: { ...recovered },
    },
  }
}
