import type { Clock } from '@hookledger/core'
import { nextReadyAfter, type Db } from '@hookledger/store'

/** How long an idle pass waits for the database to say when the next endpoint is ready. */
const IDLE_LOOK_TIMEOUT_MS = 200

/**
 * How long an idle producer pass (with a free slot) waits: the poll interval, or less when an
 * endpoint becomes ready sooner (a rate limit's bucket refilling, a short backoff) — so a paced
 * endpoint gets its rate, not one request per poll. It never waits on the database for long (a
 * connection being made, an outage starting): the poll interval is the fallback, as it always was.
 */
export async function idleWaitMs(db: Db, clock: Clock, lastClaimAt: Date | null, pollMs: number): Promise<number> {
  const now = clock.now()
  let timer: NodeJS.Timeout | undefined
  // Counted from the last claim's time, not now: an endpoint that became ready in between (a
  // bucket refilling a few ms after the claim looked) is waited for 0 ms, not a whole poll; one
  // ready but not claimable at the claim's time (a suspended owner's) is not, so no busy loop.
  const next = await Promise.race([
    nextReadyAfter(db, lastClaimAt ?? now).catch(() => null),
    new Promise<null>((r) => (timer = setTimeout(() => r(null), IDLE_LOOK_TIMEOUT_MS))),
  ]).finally(() => clearTimeout(timer))
  return next === null ? pollMs : Math.min(pollMs, Math.max(0, next.getTime() - now.getTime()))
}
