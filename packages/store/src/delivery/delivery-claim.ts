import { sql } from 'kysely'
import { JOB_TIMEOUT_MS, fairShareOrder, type LedgerEntry } from '@hookledger/core'
import type { Db, Trx } from '../database/database.js'
import { ledgerWrite } from '../ledger-write.js'
import { fairClaimCandidates, type OwnerWeight, type ReadyOwner } from './owner-ready.js'
import { nextOfEndpoint } from './delivery-next.js'
import { rescueLapsedLeases } from './delivery-rescue.js'
import { claimedOf, decideHeads, lockHeads, splitHeads, type ClaimedDelivery } from './delivery-heads.js'

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
  const leaseMs = params.leaseMs ?? JOB_TIMEOUT_MS
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
  // An endpoint whose lease lapsed while a delivery held it: that delivery's worker is lost, and
  // it is taken back before the lease is taken over (delivery-rescue.ts).
  const lapsed = [...new Set(deliveries.map((d) => d.endpoint_id))]
    .map((id) => endpointById.get(id)!)
    .filter((e) => e.busy_delivery_id !== null && e.busy_until !== null && e.busy_until.getTime() <= now.getTime())
  if (lapsed.length > 0) for (const e of await rescueLapsedLeases(trx, lapsed, now, params.leaseMs)) endpointById.set(e.id, e)
  // Locked with their heads, so the lease is decided on their latest state.
  const endpoints = [...new Set(deliveries.map((d) => d.endpoint_id))].sort().map((id) => endpointById.get(id)!)
  const { entries, claimedIds } = decideHeads(heads, endpointById, { now, actor, leaseMs })
  const written = await ledgerWrite(trx, { base: { endpoints, deliveries }, entries, ...(params.restoreDurableCommit ? { durableCommit: true } : {}) })
  const eventById = new Map(heads.map((h) => [h.delivery.id, h.event]))
  const claimed = claimedOf(claimedIds, written, eventById, following)
  return { claimed, settled: deliveries.length - claimed.length, entries, ownersWaiting, endpointsWaiting }
}
