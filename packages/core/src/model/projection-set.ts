/**
 * A set of projection rows and how one ledger entry folds into it: what the store holds during
 * one write and what a replay rebuilds, both through projections.ts's evolve functions.
 */
import { impliedEnqueues } from '../events/fanout-enqueues.js'
import type { LedgerEntry } from './ledger-entry.js'
import { evolveDelivery, evolveEndpoint, type DeliveryRow, type EndpointRow } from './projections.js'

/** Projection rows by id, as the store holds them during one transaction or a replay. */
export interface ProjectionSet {
  readonly endpoints: Map<string, EndpointRow>
  readonly deliveries: Map<string, DeliveryRow>
}

/**
 * Which rows an `applyEntry` call changed. A touched id the set no longer holds was removed
 * (`endpoint.purged`, `deliveries.retired`).
 */
export interface Touched {
  readonly endpoints: Set<string>
  readonly deliveries: Set<string>
}

/**
 * The deliveries an entry is about: the one it names, or, for a batch entry
 * (`deliveries.retired`, which names none), every one in its payload.
 */
export function deliveryIdsOf(e: LedgerEntry): readonly string[] {
  if (e.delivery_id !== null) return [e.delivery_id]
  if (e.kind === 'deliveries.retired') return e.payload.delivery_ids
  return []
}

/** One row through its evolve function: set, removed, or left as it was. */
function applyTo<R>(rows: Map<string, R>, id: string, evolve: (row: R | null) => R | null, touched?: Set<string>): void {
  const before = rows.get(id) ?? null
  const after = evolve(before)
  if (after === before) return
  if (after !== null) rows.set(id, after)
  else rows.delete(id)
  touched?.add(id)
}

/**
 * Folds one entry into the set: the endpoint it names and the deliveries it is about each go
 * through their evolve function. Rows the set does not hold are taken as absent; a row the
 * function returns none for is removed.
 */
export function applyEntry(set: ProjectionSet, e: LedgerEntry, touched?: Touched): void {
  // A format-3 fan-out decision is its deliveries' enqueue too (fanout-enqueues.ts).
  for (const enqueue of impliedEnqueues(e)) applyEntry(set, enqueue, touched)
  if (e.endpoint_id !== null) applyTo(set.endpoints, e.endpoint_id, (row) => evolveEndpoint(row, e), touched?.endpoints)
  for (const id of deliveryIdsOf(e)) applyTo(set.deliveries, id, (row) => evolveDelivery(row, e), touched?.deliveries)
}
