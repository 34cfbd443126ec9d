import { sql, type ExpressionBuilder } from 'kysely'
import {
  deliveryIdFor,
  evolveDelivery,
  evolveEndpoint,
  impliedEnqueueOf,
  impliedEnqueues,
  type DeliveryRow,
  type EndpointRow,
  type FanoutVerdictInput,
  type LedgerRecord,
  type SchedulingEntry,
} from '@hookledger/core'
import type { Database, Db } from '../database/database.js'
import { LEDGER_RECORD_COLUMNS } from '../read-models.js'
import { byLedgerPosition, fanoutDecisionsOf } from './delivery-ledger-entries.js'
import { STRICT_LINE_FROM, STRICT_ORDER } from './delivery-next.js'

const SCHEDULING_KINDS = ['delivery.retry_scheduled', 'delivery.snoozed', 'delivery.lease_busy', 'delivery.enqueued', 'delivery.redelivered', 'delivery.cool_down_released']

/** `= any(array)`: the list travels as one parameter, and an empty one matches nothing (`in ()` is a syntax error). */
const anyOf = <T>(values: readonly T[]) => (eb: ExpressionBuilder<Database, keyof Database>) => eb.fn.any(eb.val(values))

/**
 * For the waiting ones among `deliveries`: the entry that last scheduled each, their endpoints'
 * leases and rate buckets, and on strict-ordered endpoints the earlier delivery each waits for
 * (the line's head, core strictBlocker) — what `waitingReason` reads.
 */
export async function waitingFacts(
  db: Db,
  owner_id: string,
  deliveries: readonly DeliveryRow[],
): Promise<{
  scheduledBy: Map<string, SchedulingEntry>
  endpoints: Map<string, Pick<EndpointRow, 'busy_until' | 'busy_delivery_id' | 'rate_limit' | 'rate_tat' | 'rate_adapted_per_second'>>
  blockedBy: Map<string, string>
}> {
  const waiting = deliveries.filter((d) => d.state === 'pending' || d.state === 'retryable')
  if (waiting.length === 0) return { scheduledBy: new Map(), endpoints: new Map(), blockedBy: new Map() }
  const ids = waiting.map((d) => d.id)
  const endpointIds = [...new Set(waiting.map((d) => d.endpoint_id))]
  const [entries, decisions, endpoints, blocked] = await Promise.all([
    db
      .selectFrom('ledger')
      .distinctOn('delivery_id')
      .select(['delivery_id', 'kind', 'payload'])
      .where('delivery_id', '=', anyOf(ids))
      .where('owner_id', '=', owner_id)
      .where('kind', '=', anyOf(SCHEDULING_KINDS))
      .orderBy('delivery_id')
      .orderBy('position', 'desc')
      .$castTo<{ delivery_id: string } & SchedulingEntry>()
      .execute(),
    // Ledger format 3: a delivery's enqueue may be its event's fan-out decision (fanout-enqueues.ts).
    fanoutDecisionsOf(db, owner_id, [...new Set(waiting.map((d) => d.event_id))]),
    db
      .selectFrom('endpoints')
      .select(['id', 'busy_until', 'busy_delivery_id', 'rate_limit', 'rate_tat', 'rate_adapted_per_second'])
      .where('id', '=', anyOf(endpointIds))
      .where('owner_id', '=', owner_id)
      .execute(),
    // The head of each strict endpoint's line, when it is not the delivery itself.
    sql<{ id: string; blocked_by: string }>`
      select w.id, b.id as blocked_by
      from delivery_origins w
      join endpoints ep on ep.id = w.endpoint_id and ep.ordering = 'strict'
      cross join lateral (select d.id from ${STRICT_LINE_FROM} order by ${STRICT_ORDER} limit 1) b
      where w.id = any(${ids}::uuid[]) and w.owner_id = ${owner_id} and b.id <> w.id
    `.execute(db),
  ])
  const scheduledBy = new Map<string, SchedulingEntry>(entries.map((e) => [e.delivery_id, e]))
  // A delivery no entry of its own scheduled was scheduled by its enqueue: its decision's.
  for (const d of waiting) {
    if (scheduledBy.has(d.id)) continue
    for (const decision of decisions) {
      const enqueue = decision.event_id === d.event_id ? impliedEnqueueOf(decision, d.endpoint_id) : null
      if (enqueue) scheduledBy.set(d.id, enqueue)
    }
  }
  return {
    scheduledBy,
    endpoints: new Map(endpoints.map((e) => [e.id, e])),
    blockedBy: new Map(blocked.rows.map((r) => [r.id, r.blocked_by])),
  }
}

export interface EventExplainFacts {
  readonly event: { readonly id: string; readonly type: string; readonly published_at: Date } | null
  readonly decision: (FanoutVerdictInput & { readonly decided_at: Date }) | null
  readonly endpoints: {
    readonly endpoint: EndpointRow
    readonly at_decision: EndpointRow | null
    readonly delivery: { id: string; state: DeliveryRow['state']; retired: boolean } | null
    readonly delivery_id: string
  }[]
}

/**
 * What `events.explain` reads, all from the ledger but the endpoints' current rows: the event's
 * `event.published` and `fanout.decided` entries (ledger_event_decisions_idx),
 * each endpoint of the owner folded through its own entries up to the decision, and each
 * delivery of the event (by the id derived from the pair; a retired one rebuilt from its
 * entries). Purged endpoints are not among them.
 */
export async function eventExplainFacts(db: Db, owner_id: string, event_id: string): Promise<EventExplainFacts> {
  const decisions = await db
    .selectFrom('ledger')
    .select(LEDGER_RECORD_COLUMNS)
    .where('event_id', '=', event_id)
    .where('owner_id', '=', owner_id)
    .where('kind', 'in', ['event.published', 'fanout.decided'])
    .orderBy('position')
    .$castTo<LedgerRecord>()
    .execute()
  const published = decisions.find((r) => r.kind === 'event.published')
  const decided = decisions.find((r) => r.kind === 'fanout.decided')
  if (!published) return { event: null, decision: null, endpoints: [] }
  const type = String(published.payload['type'])
  const endpoints = await db.selectFrom('endpoints').selectAll().where('owner_id', '=', owner_id).orderBy('created_at').orderBy('id').execute()
  const ids = endpoints.map((e) => e.id)
  const endpointEntries = decided
    ? await db
        .selectFrom('ledger')
        .select(LEDGER_RECORD_COLUMNS)
        .where('endpoint_id', '=', anyOf(ids))
        .where('delivery_id', 'is', null)
        .where('position', '<', decided.position)
        .orderBy('position')
        .$castTo<LedgerRecord>()
        .execute()
    : []
  const deliveryIds = endpoints.map((e) => deliveryIdFor(e.id, event_id))
  const [live, logged] = await Promise.all([
    db.selectFrom('deliveries').selectAll().where('id', '=', anyOf(deliveryIds)).where('owner_id', '=', owner_id).execute(),
    db
      .selectFrom('ledger')
      .select(LEDGER_RECORD_COLUMNS)
      .where('delivery_id', '=', anyOf(deliveryIds))
      .where('owner_id', '=', owner_id)
      .orderBy('position')
      .$castTo<LedgerRecord>()
      .execute(),
  ])
  const liveById = new Map(live.map((d) => [d.id, d]))
  // Ledger format 3: the decisions enqueued their deliveries (fanout-enqueues.ts).
  const implied = decisions.flatMap((d) => impliedEnqueues(d).map((e) => ({ ...e, position: d.position })))
  const history = implied.length === 0 ? logged : [...logged, ...implied].sort(byLedgerPosition)
  const foldedDeliveries = new Map<string, DeliveryRow | null>()
  for (const e of history) foldedDeliveries.set(e.delivery_id!, evolveDelivery(foldedDeliveries.get(e.delivery_id!) ?? null, e))
  const atDecision = new Map<string, EndpointRow | null>()
  for (const e of endpointEntries) atDecision.set(e.endpoint_id!, evolveEndpoint(atDecision.get(e.endpoint_id!) ?? null, e))
  return {
    event: { id: event_id, type, published_at: published.occurred_at },
    decision: decided
      ? {
          type,
          matched: (decided.payload['matched'] as string[]) ?? [],
          denied: (decided.payload['denied'] as { endpoint_id: string; reason: string }[]) ?? [],
          skipped_internal: decided.payload['skipped_internal'] === true,
          decided_at: decided.occurred_at,
        }
      : null,
    endpoints: endpoints.map((endpoint, i) => {
      const id = deliveryIds[i]!
      const row = liveById.get(id) ?? null
      const folded = row ?? foldedDeliveries.get(id) ?? null
      return {
        endpoint,
        at_decision: atDecision.get(endpoint.id) ?? null,
        delivery: folded ? { id, state: folded.state, retired: row === null } : null,
        delivery_id: id,
      }
    }),
  }
}
