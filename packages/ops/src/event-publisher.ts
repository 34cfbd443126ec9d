import { ownerPublishRefusal, refusalRememberedUntil, type EventCatalog, type InputRefusal } from '@hookledger/core'
import { ownerPublishAdmit, type Db } from '@hookledger/store'
import { createPublisher, PublishError, type Publisher, type PublishOutcome, type PublishTransaction } from '@hookledger/publisher'
import { OpError } from './op-error.js'

// The rules and the input schema are core's (event-rules.ts), shared with @hookledger/publisher.
export { EVENT_DATA_MAX_BYTES, publishInputSchema, type PublishInput } from '@hookledger/core'

const publishers = new WeakMap<EventCatalog, Map<string, Publisher>>()

/** How long at most an API process answers an owner from a rate-limit refusal it just had. */
export const REFUSAL_REMEMBERED_MAX_MS = 1_000
/** Owners remembered at most; past it the expired are dropped (and, if that is not enough, all). */
const MAX_OWNERS = 10_000

interface Remembered {
  readonly until: number
  readonly refusal: InputRefusal
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
  current(owner: string, now: Date): InputRefusal | null {
    const r = this.#byOwner.get(owner)
    if (r === undefined) return null
    if (now.getTime() < r.until) return r.refusal
    this.#byOwner.delete(owner)
    return null
  }

  /** Remembers a refusal that passes (one with `retry_at`: over the rate); others are not. */
  remember(owner: string, refusal: InputRefusal, now: Date): void {
    const until = refusal.retry_at === undefined ? null : refusalRememberedUntil(refusal.retry_at, now, REFUSAL_REMEMBERED_MAX_MS)
    if (until === null) return
    if (this.#byOwner.size >= MAX_OWNERS) {
      for (const [o, r] of this.#byOwner) if (r.until <= now.getTime()) this.#byOwner.delete(o)
      if (this.#byOwner.size >= MAX_OWNERS) this.#byOwner.clear()
    }
    this.#byOwner.set(owner, { until: until.getTime(), refusal })
  }
}

const refusalsByDb = new WeakMap<Db, PublishRefusals>()

/** An owner's publish refusal as the operation's error (its `retry_at` as `retryAt`). */
const refusalError = (r: InputRefusal) => new OpError(r.code, r.message, undefined, undefined, r.retry_at === undefined ? undefined : new Date(r.retry_at))

/** This process's remembered rate-limit refusals for the install `db` is open on. */
export function publishRefusalsOf(db: Db): PublishRefusals {
  let r = refusalsByDb.get(db)
  if (!r) refusalsByDb.set(db, (r = new PublishRefusals()))
  return r
}

/**
 * A rate-limit refusal this process had for `owner` that still holds at `now` (PublishRefusals):
 * answered without asking the database.
 * @throws OpError `owner_rate_limited` (429, with `retryAt`)
 */
export function eventPublishRefusedAlready(refusals: PublishRefusals, owner: string, now: Date): void {
  const r = refusals.current(owner, now)
  if (r) throw refusalError(r)
}

/**
 * The owner's publish limit for one event through the API, in a statement of its own before the
 * publish's transaction (store `ownerPublishAdmit`, migration 0018): the owner's row is not held
 * through that transaction's commit, so its publishes do not queue on each other. A rate-limit
 * refusal is remembered in `refusals`.
 * @throws OpError `owner_suspended` (403) or `owner_rate_limited` (429, with `retryAt`)
 */
export async function eventPublishAdmit(db: Db, refusals: PublishRefusals, owner: string, now: Date): Promise<void> {
  const refusal = await ownerPublishAdmit(db, owner, 1, now)
  if (refusal === null) return
  const r = ownerPublishRefusal(owner, refusal)
  refusals.remember(owner, r, now)
  throw refusalError(r)
}

/**
 * `POST /api/events` stores through the same publisher an application calls in its own
 * transaction, so both refuse, de-duplicate and answer a conflicting re-publication alike — once
 * `eventPublishAdmit` let it through (the publisher then checks suspension, not the limit).
 * The catalog is the database's (the publisher reads the declared types in `trx`), laid over
 * `catalog`, the built-ins.
 * @throws OpError the publisher's refusal (400, 403, 409, 413, 422)
 */
export async function eventPublish(
  trx: PublishTransaction,
  params: { catalog: EventCatalog; schema: string; owner_id: string; actor: string; now: Date; event: Record<string, unknown> },
): Promise<PublishOutcome> {
  let bySchema = publishers.get(params.catalog)
  if (!bySchema) publishers.set(params.catalog, (bySchema = new Map()))
  let publisher = bySchema.get(params.schema)
  if (!publisher) bySchema.set(params.schema, (publisher = createPublisher({ catalog: params.catalog, schema: params.schema, admitted: true })))
  try {
    const [outcome] = await publisher.publishEvents(
      trx,
      [{ ...(params.event as { type: string; subject: string }), owner_id: params.owner_id }],
      { now: params.now, actor: params.actor },
    )
    return outcome!
  } catch (err) {
    if (err instanceof PublishError) throw new OpError(err.code, err.message, err.field, err.pointer, err.retryAt)
    throw err
  }
}
