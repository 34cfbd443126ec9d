/**
 * The heads a claim decides: due deliveries locked by id with their events (and endpoints), split
 * into heads and the deliveries after them, decided against their endpoints. The claim, the
 * settle that passes a lease on and the one-call settle's look-ahead share them.
 */
import { sql, type RawBuilder } from 'kysely'
import { decideClaim, type DeliveryRow, type EndpointRow, type LedgerEntry } from '@hookledger/core'
import type { Trx } from '../database/database.js'
import { DELIVERY_ROW_COLUMNS } from './delivery-row-sql.js'
import { ENDPOINT_COLUMNS } from '../projection-write.js'
import { nextOfEndpoint } from './delivery-next.js'

/** The event as it travels: thin, no content. */
export interface ThinEvent {
  readonly id: string
  readonly type: string
  readonly subject: string
  readonly occurred_at: Date
  readonly data: Record<string, unknown>
}

/** The event columns the claim reads beside each head (null when the event was pruned). */
interface HeadEvent {
  readonly ev_id: string | null
  readonly ev_type: string | null
  readonly ev_subject: string | null
  readonly ev_occurred_at: Date | null
  readonly ev_data: Record<string, unknown> | null
}

/**
 * The endpoint's next due delivery after a claimed one, read (and locked) in the claim's
 * transaction but not claimed: the worker may send it the moment the claimed one is answered,
 * and its settle claims it (`deliverySettleBatch`'s `started`). Nothing is written for it, so a
 * worker that dies first leaves it pending, no attempt spent.
 */
export interface FollowingDelivery {
  readonly delivery: DeliveryRow
  readonly event: ThinEvent
}

/** A delivery this worker now holds, with everything needed to sign and send it. */
export interface ClaimedDelivery {
  readonly delivery: DeliveryRow
  readonly endpoint: EndpointRow
  readonly event: ThinEvent
  /** The endpoint's next due delivery, if any (see FollowingDelivery). */
  readonly following?: FollowingDelivery
}

/** The event columns read beside a delivery row (`ev`: the events row joined to it). */
export const HEAD_EVENT_COLUMNS = sql.raw(
  'ev.id as ev_id, ev.type as ev_type, ev.subject as ev_subject, ev.occurred_at as ev_occurred_at, ev.data as ev_data',
)

/** A delivery row read with HEAD_EVENT_COLUMNS, split into the row and its event (null when pruned). */
export function deliveryWithEvent<R extends DeliveryRow & HeadEvent>({ ev_id, ev_type, ev_subject, ev_occurred_at, ev_data, ...rest }: R): {
  delivery: Omit<R, keyof HeadEvent>
  event: ThinEvent | null
} {
  return {
    delivery: rest,
    event: ev_id === null ? null : { id: ev_id, type: ev_type!, subject: ev_subject!, occurred_at: ev_occurred_at!, data: ev_data! },
  }
}

/** A locked due delivery and its event (null when the event was pruned). */
export interface LockedHead {
  readonly delivery: DeliveryRow
  readonly event: ThinEvent | null
  /** 1: its endpoint's head, to decide; 2: the delivery after it (a FollowingDelivery). */
  readonly nth: number
}

/** An endpoint row read beside each head, its columns prefixed `ep__` (the row's own names are the delivery's). */
const ENDPOINT_AS_EP = sql.raw(ENDPOINT_COLUMNS.map((c) => `ep.${c} as ep__${c}`).join(', '))

/** Splits an `ep__`-prefixed endpoint off a row read with ENDPOINT_AS_EP. */
function endpointOf(row: Record<string, unknown>): EndpointRow {
  const endpoint: Record<string, unknown> = {}
  for (const c of ENDPOINT_COLUMNS) {
    endpoint[c] = row[`ep__${c}`]
    delete row[`ep__${c}`]
  }
  return endpoint as unknown as EndpointRow
}

/**
 * Locks deliveries by id (`heads`: a query of `id, nth` in claim order), skipping any another
 * worker holds or that stopped being due since, and reads their events in the same statement.
 * Each is found by primary key, whatever the planner's estimate of the backlog.
 *
 * `withEndpoints`: their endpoints are locked and read in the same statement too, skipping a
 * delivery whose endpoint another transaction holds (a settle passing its lease on, an owner's
 * edit): the next pass takes it. Never waiting on a lock, the statement cannot deadlock, so the
 * endpoints need no lock order.
 */
export async function lockHeads(
  trx: Trx,
  heads: RawBuilder<unknown>,
  now: Date,
  withEndpoints = false,
): Promise<{ locked: LockedHead[]; endpoints: Map<string, EndpointRow> }> {
  const rows = (
    await sql<DeliveryRow & HeadEvent & { nth: number }>`
    with heads as materialized (${heads})
    select ${DELIVERY_ROW_COLUMNS}, heads.nth::int as nth, ${HEAD_EVENT_COLUMNS}${withEndpoints ? sql`, ${ENDPOINT_AS_EP}` : sql``}
    from heads
    cross join lateral (
      select * from delivery_states s
      where s.id = heads.id and s.state in ('pending', 'retryable') and s.next_attempt_at <= ${now}
      limit 1
    ) s
    join delivery_origins o on o.id = s.id
    ${withEndpoints ? sql`join endpoints ep on ep.id = s.endpoint_id` : sql``}
    left join events ev on ev.owner_id = o.owner_id and ev.id = o.event_id
    order by s.next_attempt_at, s.id
    for update of s${withEndpoints ? sql`, ep` : sql``} skip locked
  `.execute(trx)
  ).rows
  const endpoints = new Map<string, EndpointRow>()
  const locked = rows.map((row) => {
    if (withEndpoints) {
      const endpoint = endpointOf(row as unknown as Record<string, unknown>)
      endpoints.set(endpoint.id, endpoint)
    }
    const { delivery: { nth, ...delivery }, event } = deliveryWithEvent(row)
    return { delivery, nth, event }
  })
  return { locked, endpoints }
}

/** lockHeads without the endpoints (the settle passing leases on decides on the endpoints it read itself). */
async function lockHeadsOnly(trx: Trx, heads: RawBuilder<unknown>, now: Date): Promise<LockedHead[]> {
  return (await lockHeads(trx, heads, now)).locked
}

/**
 * Splits locked rows into the heads to decide (at most `limit`, in lock order) and, per
 * endpoint, the delivery after its head. A second row whose head another worker holds is
 * neither: that worker decides the endpoint.
 */
export function splitHeads(locked: readonly LockedHead[], limit = Infinity): { heads: LockedHead[]; following: Map<string, FollowingDelivery> } {
  const heads = locked.filter((h) => h.nth === 1).slice(0, limit)
  const withHead = new Set(heads.map((h) => h.delivery.endpoint_id))
  const following = new Map<string, FollowingDelivery>()
  for (const h of locked) {
    if (h.nth === 2 && h.event !== null && withHead.has(h.delivery.endpoint_id)) following.set(h.delivery.endpoint_id, { delivery: h.delivery, event: h.event })
  }
  return { heads, following }
}

/**
 * The next delivery of each of these endpoints and the one after it, locked (for the settle that
 * passes an endpoint's lease straight on). The next is the one the worker already started
 * (`started`, by endpoint id) when there is one, else the first of the endpoint's line
 * (delivery-next.ts). `settled`: the deliveries this settle records, still running in its
 * snapshot, left off the line. One index probe each (a strict endpoint: a sort of its backlog).
 */
export function lockNextHeadsOf(
  trx: Trx,
  endpointIds: readonly string[],
  now: Date,
  started: ReadonlyMap<string, string> = new Map(),
  settled: readonly string[] = [],
): Promise<LockedHead[]> {
  if (endpointIds.length === 0) return Promise.resolve([])
  const startedIds = endpointIds.map((id) => started.get(id) ?? null)
  return lockHeadsOnly(
    trx,
    sql`
      select h.id, h.nth from unnest(${endpointIds}::uuid[], ${startedIds}::uuid[]) as e(id, started)
      cross join lateral (
        select c.id, row_number() over (order by c.k0, c.k, c.id) as nth from (
          select d.id, 0 as k0, 0::bigint as k from delivery_states d where d.id = e.started and d.endpoint_id = e.id
          union all
          select t.id, 1 as k0, t.k from (${nextOfEndpoint(sql`e.id`, now, 2, sql`array_remove(${[...settled]}::uuid[] || e.started, null)`)}) t
        ) c
        order by c.k0, c.k, c.id limit 2
      ) h
    `,
    now,
  )
}

/**
 * Decides each locked head against its endpoint as it is now (`decideClaim`: discard, snooze
 * for a busy lease, or claim with the endpoint's lease): the entries to write and the ids
 * claimed, at most one per endpoint.
 */
export function decideHeads(
  heads: readonly LockedHead[],
  endpointById: ReadonlyMap<string, EndpointRow>,
  ctx: { now: Date; actor: string; leaseMs: number },
): { entries: LedgerEntry[]; claimedIds: string[] } {
  const entries: LedgerEntry[] = []
  const claimedIds: string[] = []
  const leasedNow = new Set<string>()
  for (const { delivery, event } of heads) {
    const endpoint = endpointById.get(delivery.endpoint_id)!
    const decision = decideClaim(delivery, endpoint, event !== null, { ...ctx, leasedByThisClaim: leasedNow.has(endpoint.id) })
    entries.push(...decision.entries)
    if (decision.claimed) {
      leasedNow.add(endpoint.id)
      claimedIds.push(delivery.id)
    }
  }
  return { entries, claimedIds }
}

/** The claims as written, each with its endpoint's following delivery. */
export function claimedOf(
  ids: readonly string[],
  written: { deliveries: ReadonlyMap<string, DeliveryRow>; endpoints: ReadonlyMap<string, EndpointRow> },
  eventById: ReadonlyMap<string, ThinEvent | null>,
  following: ReadonlyMap<string, FollowingDelivery>,
): ClaimedDelivery[] {
  return ids.map((id) => {
    const delivery = written.deliveries.get(id)!
    const next = following.get(delivery.endpoint_id)
    return { delivery, endpoint: written.endpoints.get(delivery.endpoint_id)!, event: eventById.get(id)!, ...(next ? { following: next } : {}) }
  })
}
