import { sql } from 'kysely'
import {
  DeliveryOutcome,
  adaptedRateAfter,
  leaseHandsOn,
  decideDelivery,
  decideEndpointAfterOutcome,
  releaseCoolDown,
  isOperationalEventType,
  operationalEventsOf,
  settleDroppedEntry,
  type AttemptResult,
  type DeliveryRow,
  type EndpointRow,
  type LedgerEntry,
} from '@hookledger/core'
import { randomUUID } from 'node:crypto'
import type { Db, Trx } from '../database/database.js'
import { limitTransactionIdle } from '../database/transaction-idle-limit.js'
import { DELIVERY_ROW_COLUMNS } from './delivery-row-sql.js'
import { eventInsert } from '../event-publish.js'
import { claimedOf, decideHeads, lockNextHeadsOf, splitHeads, type ClaimedDelivery, type FollowingDelivery, type LockedHead } from './delivery-heads.js'
import { followingAlongside, followingFromRows } from './delivery-following.js'
import { LeaseMovedError, foldOver, ledgerWrite } from '../ledger-write.js'

/** One finished claim: the running row as the worker holds it, and what happened. */
export interface Settlement {
  readonly delivery: DeliveryRow
  readonly outcome: DeliveryOutcome
  /** `worker:<id>` that made the attempt. */
  readonly actor: string
  /** The transport's own answer, when an attempt was made (for instruments). */
  readonly result?: AttemptResult
  /**
   * The endpoint as the claim's write left it (its lease). With it, `deliverySettleBatch` need
   * not re-read and lock the rows first (optimistic on their versions and the lease).
   */
  readonly endpoint?: EndpointRow
}

/** The claim a running delivery was taken under; its settle applies only while it still holds. */
export interface ClaimGuard {
  readonly id: string
  readonly claimed_by: string
  readonly lease_until: Date
}

/**
 * The write primitive's guard for the worker: locks the running deliveries whose claim is still
 * the one the worker holds (a rescuer may have taken a row back after its lease expired, and a
 * later claim re-leased it) and returns them as they are now. Rows found by primary key (the id
 * list gives the planner that path); the state test is written `is not distinct from` — the
 * same test as `=` on this non-null column, but not one a planner could answer from a partial
 * index on running rows (there was one until migration 0021, whose dead entries piled up
 * between vacuums).
 */
export async function deliveriesLockClaimed(trx: Trx, guards: readonly ClaimGuard[]): Promise<DeliveryRow[]> {
  if (guards.length === 0) return []
  const json = JSON.stringify(guards.map((g) => ({ id: g.id, claimed_by: g.claimed_by, lease_until: g.lease_until.toISOString() })))
  const result = await sql<DeliveryRow>`
    select ${DELIVERY_ROW_COLUMNS} from delivery_states s
    join jsonb_to_recordset(${json}::jsonb) as g(id uuid, claimed_by text, lease_until timestamptz) on s.id = g.id
    join delivery_origins o on o.id = s.id
    where s.id = any(${guards.map((g) => g.id)}::uuid[])
      and s.claimed_by = g.claimed_by and s.lease_until = g.lease_until
      and s.state is not distinct from 'running'
    order by s.id
    for update of s
  `.execute(trx)
  return result.rows
}

/**
 * Records outcomes of running deliveries in one transaction: locks the rows whose claim still
 * holds (an outcome for a row the rescuer took back is dropped), locks their endpoints in id
 * order, decides each delivery's entries and the endpoint transitions they imply, and writes
 * it all through the write primitive in one statement. Returns the ids recorded.
 */
export async function deliverySettle(trx: Trx, items: readonly Settlement[], now: Date): Promise<Set<string>> {
  return (await settle(trx, items, now, null, false)).recorded
}

/** Who takes the next delivery of a released endpoint, and for how long. */
export interface ClaimNext {
  readonly actor: string
  readonly leaseMs: number
  /** Only these endpoints pass their lease on (default: every endpoint the settle releases). */
  readonly endpointIds?: ReadonlySet<string>
  /**
   * By endpoint id: the following delivery the worker already sent when this settle's outcome
   * came in (pipelined under the endpoint's lease). It is the one claimed, not the earliest due.
   */
  readonly started?: ReadonlyMap<string, string>
  /**
   * By endpoint id: the following delivery each claim read (`ClaimedDelivery.following`). The
   * one-call settle claims it on the row as read; an endpoint without one is released.
   */
  readonly following?: ReadonlyMap<string, FollowingDelivery>
}

/** What one settle recorded. */
export interface SettleResult {
  readonly recorded: Set<string>
  /** The next deliveries of released endpoints, claimed in the same transaction. */
  readonly claimed: ClaimedDelivery[]
  /** The ledger entries written (for instruments: outcomes and endpoint transitions are counted from these). */
  readonly entries: readonly LedgerEntry[]
}

/**
 * Settles a batch in one transaction. With `next`, each endpoint it releases (still enabled,
 * not deleted) passes its lease straight on to its next due delivery, claimed for
 * `next.actor`: the endpoint's next attempt starts without waiting for a claim round; the
 * result names those claims (at most one per endpoint).
 *
 * When every settlement carries the endpoint its claim left, on distinct endpoints, it first
 * writes optimistically on the rows as the worker holds them — two round trips fewer than
 * re-reading and locking them. Three checks stand in for the locks: the write function's
 * version of each changed delivery (a rescuer that took the delivery back moved it) and
 * endpoint (an owner's edit moved it), and the endpoint's lease, which the write locks and
 * compares first (`leasesHeld`: an endpoint's version does not move with its lease, so without
 * it a stale base could release a lease another delivery holds). If any has moved, nothing is
 * written and the batch runs again the locking way, which re-reads the rows, drops outcomes
 * whose claim is gone and decides on the endpoints as they are now.
 */
export async function deliverySettleBatch(db: Db, items: readonly Settlement[], now: Date, next: ClaimNext | null): Promise<SettleResult> {
  const endpoints = new Set(items.map((i) => i.endpoint?.id))
  if (items.length > 0 && !endpoints.has(undefined) && endpoints.size === items.length) {
    try {
      return await settle(db, items, now, next, true)
    } catch (err) {
      if (!(err instanceof LeaseMovedError) && !(err instanceof NeedsTransaction) && !isRowVersionRefusal(err)) throw err
    }
  }
  return db.transaction().execute(async (trx) => {
    await limitTransactionIdle(trx)
    return settle(trx, items, now, next, false)
  })
}

/** hookledger_write's refusal of a row changed since it was read. */
function isRowVersionRefusal(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === '23000' && (err as { hint?: unknown }).hint === 'row_version'
}

/** The one-call settle cannot do this batch alone (it stores the owner's news): take the transaction. */
class NeedsTransaction extends Error {}

/**
 * One settle. Optimistic (`q` is the pool: one autocommitted statement): on the rows as the
 * worker holds them, claiming each endpoint's following delivery as its claim read it, and
 * reading the one after it in the same statement. Locking (`q` is a transaction): re-reads and
 * locks the rows, then each released endpoint's next (the one already started, else the
 * earliest due) and the one after it.
 */
async function settle(
  q: Db,
  items: readonly Settlement[],
  now: Date,
  next: ClaimNext | null,
  optimistic: boolean,
): Promise<SettleResult> {
  if (items.length === 0) return { recorded: new Set(), claimed: [], entries: [] }
  const held = optimistic
    ? items.map((i) => i.delivery)
    : await deliveriesLockClaimed(
        q as Trx,
        items.map((i) => ({ id: i.delivery.id, claimed_by: i.delivery.claimed_by!, lease_until: i.delivery.lease_until! })),
      )
  const heldById = new Map(held.map((d) => [d.id, d]))
  const kept = items.filter((i) => heldById.has(i.delivery.id))
  // An outcome whose claim is gone is not applied, but what the receiver answered stays in
  // the ledger (`delivery.settle_dropped`): no real answer vanishes from the audit trail.
  const dropped = items.filter((i) => !heldById.has(i.delivery.id)).map((i) => settleDroppedEntry(i.delivery, i.outcome, { now, actor: i.actor }))
  if (kept.length === 0) {
    await ledgerWrite(q, { entries: dropped })
    return { recorded: new Set(), claimed: [], entries: dropped }
  }
  const endpointIds = [...new Set(kept.map((i) => i.delivery.endpoint_id))].sort()
  const endpoints = optimistic
    ? kept.map((i) => i.endpoint!).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    : (await sql<EndpointRow>`select * from endpoints where id = any(${endpointIds}::uuid[]) order by id for update`.execute(q)).rows
  const { entries, current } = decideOutcomes(kept, heldById, endpoints, now)
  // The owner's news of what this settle did (failing, disabled, recovered, given up), stored
  // in the same transaction: it exists if and only if the transition committed.
  const news = operationalEventsOf(entries, (id) => isOperationalEventType(heldById.get(id)?.event_type ?? ''))
  // News to store, or a recovery's cool-down to release (rows to read and lock): the transaction.
  if (optimistic && (news.length > 0 || entries.some((e) => e.kind === 'endpoint.recovered'))) throw new NeedsTransaction()
  let heads: LockedHead[] = []
  let following = new Map<string, FollowingDelivery>()
  let claimedIds: string[] = []
  if (next) {
    const done = new Set(kept.filter((i) => i.outcome.type === 'completed' || i.outcome.type === 'discarded').map((i) => i.delivery.endpoint_id))
    const free = endpointIds.filter((id) => (!next.endpointIds || next.endpointIds.has(id)) && leaseHandsOn(current.get(id)!, done.has(id), now))
    // A caller that does not say what follows gets the earliest due, which takes locks.
    if (optimistic && next.following === undefined && free.length > 0) throw new NeedsTransaction()
    if (optimistic) {
      heads = free.flatMap((id) => {
        const f = next.following?.get(id)
        return f ? [{ delivery: f.delivery, event: f.event, nth: 1 }] : []
      })
    } else {
      ;({ heads, following } = splitHeads(await lockNextHeadsOf(q as Trx, free, now, next.started, kept.map((i) => i.delivery.id))))
      // A started delivery that can no longer be claimed leaves its endpoint to nobody in this
      // settle: its answer, when it comes, is kept as settle_dropped.
      heads = heads.filter((h) => !next.started?.has(h.delivery.endpoint_id) || next.started.get(h.delivery.endpoint_id) === h.delivery.id)
    }
    const decided = decideHeads(heads, current, { now, actor: next.actor, leaseMs: next.leaseMs })
    entries.push(...decided.entries)
    claimedIds = decided.claimedIds
  }
  // A recovered endpoint's deliveries held back by its failing cool-down are due now (a recovery
  // always takes the transaction, above).
  const recovered = entries.filter((e) => e.kind === 'endpoint.recovered').map((e) => e.endpoint_id!)
  const heldBack = recovered.length === 0 ? [] : await deliveriesHeldBackOf(q as Trx, recovered, new Set([...held.map((d) => d.id), ...heads.map((h) => h.delivery.id)]), now)
  entries.push(...releaseCoolDown(heldBack, { now, actor: 'system' }))
  const all = [...entries, ...dropped]
  const claimedHeads = heads.filter((h) => claimedIds.includes(h.delivery.id))
  const written = await ledgerWrite(q, {
    base: { deliveries: [...held, ...heads.map((h) => h.delivery), ...heldBack], endpoints },
    entries: all,
    ...(optimistic
      ? {
          leasesHeld: endpoints.map((e) => ({ id: e.id, busy_delivery_id: e.busy_delivery_id, busy_until: e.busy_until })),
          ...(claimedHeads.length > 0 ? { alongside: followingAlongside(claimedHeads.map((h) => h.delivery), now, kept.map((i) => i.delivery.id), endpoints.some((e) => e.ordering === 'strict')) } : {}),
        }
      : {}),
  })
  if (optimistic) following = followingFromRows(written.alongside)
  for (const n of news) {
    await eventInsert(q as Trx, {
      owner_id: n.owner_id,
      event: { id: `whop_${randomUUID().replaceAll('-', '')}`, type: n.type, subject: n.subject, occurred_at: now, data: n.data },
      now,
      actor: 'system',
    })
  }
  const eventById = new Map(heads.map((h) => [h.delivery.id, h.event]))
  const claimed = claimedOf(claimedIds, written, eventById, following)
  return { recorded: new Set(kept.map((i) => i.delivery.id)), claimed, entries: all }
}

/**
 * The waiting deliveries of these endpoints not yet due, locked (for the cool-down release;
 * `releaseCoolDown` picks those the cool-down holds back). `except`: rows this settle already holds.
 */
async function deliveriesHeldBackOf(trx: Trx, endpointIds: readonly string[], except: ReadonlySet<string>, now: Date): Promise<DeliveryRow[]> {
  const rows = await sql<DeliveryRow>`
    select ${DELIVERY_ROW_COLUMNS} from delivery_states s join delivery_origins o on o.id = s.id
    where s.endpoint_id = any(${endpointIds}::uuid[]) and s.state = 'pending' and s.attempts = 0 and s.snoozes = 0
      and s.next_attempt_at > ${now}
    order by s.id
    for update of s
  `.execute(trx)
  return rows.rows.filter((d) => !except.has(d.id))
}

/** Each kept outcome's entries and the endpoint transitions they imply, in order; the endpoints after them. */
function decideOutcomes(
  kept: readonly Settlement[],
  heldById: ReadonlyMap<string, DeliveryRow>,
  endpoints: readonly EndpointRow[],
  now: Date,
): { entries: LedgerEntry[]; current: Map<string, EndpointRow> } {
  const current = new Map(endpoints.map((e) => [e.id, e]))
  const entries: LedgerEntry[] = []
  for (const it of kept) {
    const delivery = heldById.get(it.delivery.id)!
    const own = withAdaptedRate(decideDelivery(delivery, it.outcome, { now, actor: it.actor }), current.get(delivery.endpoint_id)!)
    // The endpoint decision sees the row after this delivery released its lease.
    const released = foldOver({ endpoints: [current.get(delivery.endpoint_id)!] }, own).set.endpoints
    const endpoint = released.get(delivery.endpoint_id)!
    const transitions = decideEndpointAfterOutcome(endpoint, it.outcome, now, it.actor)
    current.set(endpoint.id, foldOver({ endpoints: [endpoint] }, transitions).set.endpoints.get(endpoint.id)!)
    entries.push(...own, ...transitions)
  }
  return { entries, current }
}

/** An adaptive rate limit's new rate after this answer, on the attempt's entry (core adaptedRateAfter). */
function withAdaptedRate(entries: LedgerEntry[], endpoint: EndpointRow): LedgerEntry[] {
  return entries.map((e) => {
    if (e.kind !== 'delivery.attempted') return e
    const adapted = adaptedRateAfter(endpoint, e.payload.status_code)
    return adapted === undefined ? e : { ...e, payload: { ...e.payload, rate_adapted_per_second: adapted } }
  })
}
