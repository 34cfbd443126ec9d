/**
 * Where a leased endpoint's queue head sits (migration 0019's `endpoint_queue_expected`): its
 * lease's end rounded up to a 2-second grid. A pipelined lease moves its end with every claim and
 * settle; on the grid the head stays put for 2 s of them, so the write, which stores only a head
 * that changed, rewrites the endpoint's queue row once in 2 s instead of once a delivery. The
 * claim decides from the lease itself; the head only says when an endpoint whose lease ran out
 * unreleased (a dead or hung worker's) is worth reading again: up to 2 s after its end, as long
 * as the busy snooze (claim-decider.ts). The SQL is the rule; this is its statement in core, for
 * the tests and for readers.
 */
export const LEASED_HEAD_GRID_MS = 2_000

/** The lease's end, rounded up to the grid (an end already on it stays). */
export function leasedHeadAt(leaseEnd: Date): Date {
  const ms = leaseEnd.getTime()
  return new Date(Math.ceil(ms / LEASED_HEAD_GRID_MS) * LEASED_HEAD_GRID_MS)
}
