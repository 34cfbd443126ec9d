/**
 * Whether a settle passes an endpoint's lease straight on to its next delivery, claiming it in
 * the same write (the pipelined lease), or lets the lease go back and the claim take the
 * endpoint later. Pure: the store's settle asks it for each endpoint it released.
 */
import type { EndpointRow } from '../model/projections.js'
import { rateAllows } from '../endpoint/rate-limit.js'

export function leaseHandsOn(
  /** The endpoint after the settled outcome released its lease. */
  endpoint: EndpointRow,
  /** Whether the delivery settled here is done (completed or discarded), not to be retried. */
  settledDone: boolean,
  now: Date,
): boolean {
  // Disabled or deleted: its deliveries are discarded by a claim, not sent.
  if (!endpoint.enabled || endpoint.deleted_at !== null) return false
  // Another delivery holds the lease (the settle released none).
  if (endpoint.busy_until !== null && endpoint.busy_until.getTime() > now.getTime()) return false
  // A strict line moves on only past a done head: one that will be retried stays the head.
  if (endpoint.ordering === 'strict' && !settledDone) return false
  // Its rate limit's bucket is not refilled yet: the queue head waits for the bucket, and the
  // claim takes it then (no snooze entry for every early try).
  return rateAllows(endpoint, now)
}
