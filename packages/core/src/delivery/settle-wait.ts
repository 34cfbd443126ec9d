/**
 * How long an attempt's outcome may wait in the worker's settle buffer for others to share its
 * transaction. Pure: the endpoint's turn asks it for each outcome it hands to the batcher.
 *
 * A settle's cost is mostly fixed (one statement, one commit, about 2–3 ms of database time)
 * plus a little per outcome, so outcomes that arrive a few at a time cost several times more
 * each than those that arrive in batches. Endpoints that answer slowly are where they arrive a
 * few at a time: 128 endpoints answering in 200 ms hand over ~640 outcomes a second, ~5 per
 * 3 ms window (`npm run bench -- --only=fairness --stats`). Waiting longer is free exactly when
 * the endpoint's next request already went out beside the settle (the pipelined lease): the
 * settle only has to claim the delivery after that one before its answer comes, which takes
 * about as long as this one took. A quarter of that leaves the rest for the transaction.
 * When nothing went out ahead, the endpoint's next request waits on this settle: the minimum.
 * Nor does an endpoint that answers within a few settles' time wait longer: its lease (and the
 * next delivery that finds it busy) would wait with it, for little to share.
 */
export const SETTLE_WAIT_MIN_MS = 3
export const SETTLE_WAIT_MAX_MS = 50
/** Answers faster than this settle with the minimum wait. */
export const SETTLE_WAIT_SLOW_ANSWER_MS = 40
/** The share of the answered request's duration an outcome sent ahead of may wait. */
export const SETTLE_WAIT_SHARE_OF_ANSWER = 0.25

export function settleWaitMs(input: {
  /** Whether the endpoint's next delivery was sent when this one answered (the pipelined lease). */
  readonly sentAhead: boolean
  /** How long the answered request took (undefined: no request was made). */
  readonly answeredInMs: number | undefined
}): number {
  const { sentAhead, answeredInMs } = input
  if (!sentAhead || answeredInMs === undefined || !Number.isFinite(answeredInMs) || answeredInMs < SETTLE_WAIT_SLOW_ANSWER_MS) return SETTLE_WAIT_MIN_MS
  return Math.min(SETTLE_WAIT_MAX_MS, Math.max(SETTLE_WAIT_MIN_MS, Math.floor(answeredInMs * SETTLE_WAIT_SHARE_OF_ANSWER)))
}
