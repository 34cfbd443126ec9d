import { sql, type RawBuilder } from 'kysely'
import {
  JOB_TIMEOUT_MS,
  decideClaim,
  fairShareOrder,
  type DeliveryRow,
  type EndpointRow,
  type LedgerEntry,
} from '@hookledger/core'
import type { Db, Trx } from '../database/database.js'
import { DELIVERY_ROW_COLUMNS } from './delivery-row-sql.js'
import { ENDPOINT_COLUMNS } from '../projection-write.js'
import { ledgerWrite } from '../ledger-write.js'
import { fairClaimCandidates, type OwnerWeight, type ReadyOwner } from './owner-ready.js'
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

export interface DeliveryClaimParams {
  readonly now: Date
  /** Free slots: never claim more than this. */
  readonly limit: number
  /** `worker:<id>`. */
  readonly actor: string
  readonly leaseMs?: number
  /**
   * Asked once a claim, for the owners ready: what this worker holds for each (fair share gives
   * free slots to those holding least per weight) and how many of the free slots each may take
   * (the headroom kept for other owners); an owner absent: nothing held, no bound but `limit`.
   */
  readonly sharesOf?: (owners: readonly OwnerWeight[]) => ReadonlyMap<string, { readonly inFlight: number; readonly room?: number }>
  /**
   * Endpoints whose turns gave their slot up to endpoints waiting for one (core
   * `turnYieldsToWaiting`), in the order they did: within their owner, claimed after every
   * other ready endpoint, and among themselves in that order (core `fairShareOrder`).
   */
  readonly yielded?: ReadonlySet<string>
  /**
   * Told how many endpoints the claim will go on to lock, once it has weighed the candidates (at
   * most `limit`): the caller may hand the other free slots to a claim running beside this one.
   */
  readonly picked?: (endpoints: number) => void
}

/** A claim inside a transaction another write opened (the fan-out's: `claimInTransaction`). */
export interface ClaimInTransactionParams extends DeliveryClaimParams {
  /**
   * The transaction committed without waiting for its WAL flush so far (the fan-out's): a claim
   * must be durable before its POST, so its write restores the commit mode the session had.
   */
  readonly restoreDurableCommit?: boolean
}

export interface DeliveryClaimResult {
  readonly claimed: ClaimedDelivery[]
  /** Deliveries settled at claim time (endpoint disabled/deleted, event pruned, lease busy). */
  readonly settled: number
  /** The ledger entries the claim wrote (for instruments: outcomes are counted from these). */
  readonly entries: readonly LedgerEntry[]
  /** Owners with ready work this claim left for lack of slots (not suspended), with their weight and room. */
  readonly ownersWaiting: readonly ReadyOwner[]
  /** Endpoints ready that this claim did not take (owners not suspended, with room): they wait for a slot. */
  readonly endpointsWaiting: number
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
async function lockHeads(
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
  ctx: { now: Date; actor: string; leaseUntil: Date },
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

/**
 * Claims up to `limit` due deliveries, at most one per endpoint, and takes each endpoint's lease
 * (`busy_until`) in the same transaction — committed before any POST. Deliveries whose endpoint
 * is disabled or deleted, or whose event was pruned, are discarded here; one whose endpoint
 * lease another worker took in the meantime is snoozed 2 s without spending an attempt.
 *
 * Candidates come from the queue heads (`endpoint_queue.ready_at`, endpoint-queue.ts), owner by
 * owner (owner-ready.ts): only endpoints with a due delivery and no live lease are read, through
 * partial indexes, so the claim's cost follows the due work and the owners that have it, never
 * the number of endpoints, the backlog or the history. The free slots go by fair share across
 * owners (core `fairShareOrder`, weighted by each owner's `weight`, counting what this worker
 * already runs for each); a suspended owner gets none, an owner at its `max_in_flight` no more.
 * Disabled and deleted endpoints with waiting deliveries stay ready, whatever their lease: those
 * deliveries (e.g. one whose in-flight attempt was settled as a retry after the delete) must be
 * discarded, not stranded; once they are, the endpoint leaves the claim path.
 */
export async function deliveryClaim(db: Db, params: DeliveryClaimParams): Promise<DeliveryClaimResult> {
  if (params.limit <= 0) return { claimed: [], settled: 0, entries: [], ownersWaiting: [], endpointsWaiting: 0 }
  // Its idle limit (transaction-idle-limit.ts) is set by the candidates' statement.
  return db.transaction().execute((trx) => claimInTransaction(trx, params))
}

/** `deliveryClaim`'s work, in the caller's transaction (the fan-out claims what it enqueued in its own). */
export async function claimInTransaction(trx: Trx, params: ClaimInTransactionParams): Promise<DeliveryClaimResult> {
  const { now, limit, actor } = params
  if (limit <= 0) return { claimed: [], settled: 0, entries: [], ownersWaiting: [], endpointsWaiting: 0 }
  const leaseUntil = new Date(now.getTime() + (params.leaseMs ?? JOB_TIMEOUT_MS))
  const yielded = params.yielded ?? new Set<string>()
  // Read past the endpoints that gave way, so as many others as slots are seen if there are.
  const read = await fairClaimCandidates(trx, now, limit + yielded.size)
  const { owners: ownersReady, candidates } = read
  const asked = params.sharesOf?.(ownersReady)
  const shares = new Map(ownersReady.map((o) => [o.owner_id, { weight: o.weight, inFlight: 0, ...asked?.get(o.owner_id) }]))
  const picked = fairShareOrder(candidates, shares, limit, yielded).map((c) => c.endpoint_id)
  const pickedSet = new Set(picked)
  const left = new Set(candidates.filter((c) => !pickedSet.has(c.endpoint_id)).map((c) => c.owner_id))
  const ownersWaiting = ownersReady.filter((o) => left.has(o.owner_id))
  // Every endpoint ready that this claim did not take (the candidates are capped by the free
  // slots, so an owner can have more ready than were weighed), of owners with room.
  const pickedOf = new Map<string, number>()
  for (const c of candidates) if (pickedSet.has(c.endpoint_id)) pickedOf.set(c.owner_id, (pickedOf.get(c.owner_id) ?? 0) + 1)
  const endpointsWaiting = ownersReady.reduce((n, o) => n + (o.room === 0 ? 0 : Math.max(0, o.ready - (pickedOf.get(o.owner_id) ?? 0))), 0)
  params.picked?.(picked.length)
  if (picked.length === 0) return { claimed: [], settled: 0, entries: [], ownersWaiting, endpointsWaiting }
  // Without a strict endpoint among them the statement leaves the strict line out (planning its
  // joins was half of the statement's time: 1.1–1.3 → 0.6 ms); one made strict since is not read, and
  // the next pass takes it.
  const { locked, endpoints: endpointById } = await lockHeads(
    trx,
    sql`
      select h.id, h.k as nth from unnest(${picked}::uuid[]) as p(endpoint_id)
      -- Still ready in this statement's snapshot: the candidates were read a statement ago, and
      -- an endpoint another worker's settle has leased again since must not have its next
      -- delivery (already sent ahead by that worker) decided here.
      -- (By primary key, as lockHeads' deliveries: a lateral the planner cannot reorder.)
      cross join lateral (
        select q.endpoint_id from endpoint_queue q where q.endpoint_id = p.endpoint_id and q.ready_at <= ${now} limit 1
      ) q
      cross join lateral (${nextOfEndpoint(sql`q.endpoint_id`, now, 2, undefined, { strict: picked.some((id) => read.strict.has(id)) })}) h
    `,
    now,
    true,
  )
  const { heads, following } = splitHeads(locked, limit)
  if (heads.length === 0) return { claimed: [], settled: 0, entries: [], ownersWaiting, endpointsWaiting }
  const deliveries = heads.map((h) => h.delivery)
  // Locked with their heads, so the lease is decided on their latest state.
  const endpoints = [...new Set(deliveries.map((d) => d.endpoint_id))].sort().map((id) => endpointById.get(id)!)
  const { entries, claimedIds } = decideHeads(heads, endpointById, { now, actor, leaseUntil })
  const written = await ledgerWrite(trx, { base: { endpoints, deliveries }, entries, ...(params.restoreDurableCommit ? { durableCommit: true } : {}) })
  const eventById = new Map(heads.map((h) => [h.delivery.id, h.event]))
  const claimed = claimedOf(claimedIds, written, eventById, following)
  return { claimed, settled: deliveries.length - claimed.length, entries, ownersWaiting, endpointsWaiting }
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
