import { refusalRememberedUntil } from '@hookledger/core'

/** How long at most an API process answers an owner from a rate-limit refusal it just had. */
export const REFUSAL_REMEMBERED_MAX_MS = 1_000
/** Owners remembered at most; past it the expired are dropped (and, if that is not enough, all). */
const MAX_OWNERS = 10_000

interface Remembered {
  readonly until: number
  readonly retryAt: Date
  readonly message: string
}

/**
 * An API process's recent rate-limit refusals, by owner: an owner hammering past its publish
 * limit is answered 429 from here until its bucket could admit again (at most a second), without
 * an admission statement each time, so its flood costs the other owners less. Per process and
 * conservative: the bucket in the database cannot admit before `retry_at` anyway; only a raised
 * limit or a suspension is seen up to REFUSAL_REMEMBERED_MAX_MS late. Suspensions are never
 * remembered (they have no end).
 */
export class PublishRefusals {
  readonly #byOwner = new Map<string, Remembered>()

  /** The refusal still holding for `owner` at `now`, if one is remembered. */
  current(owner: string, now: Date): { readonly retryAt: Date; readonly message: string } | null {
    const r = this.#byOwner.get(owner)
    if (r === undefined) return null
    if (now.getTime() < r.until) return r
    this.#byOwner.delete(owner)
    return null
  }

  remember(owner: string, retryAt: string, message: string, now: Date): void {
    const until = refusalRememberedUntil(retryAt, now, REFUSAL_REMEMBERED_MAX_MS)
    if (until === null) return
    if (this.#byOwner.size >= MAX_OWNERS) {
      for (const [o, r] of this.#byOwner) if (r.until <= now.getTime()) this.#byOwner.delete(o)
      if (this.#byOwner.size >= MAX_OWNERS) this.#byOwner.clear()
    }
    this.#byOwner.set(owner, { until: until.getTime(), retryAt: new Date(retryAt), message })
  }
}
