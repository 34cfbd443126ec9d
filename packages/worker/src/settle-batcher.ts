import { databaseRetryDelayMs, type Clock, type Logger } from '@hookledger/core'
import { deliverySettleBatch, type ClaimedDelivery, type Db, type FollowingDelivery, type Settlement } from '@hookledger/store'
import { DatabaseHealth } from './database-health.js'
import { silentObserver, type DispatcherObserver } from './dispatcher-observer.js'

/** Flush when this many settlements are waiting… */
export const SETTLE_BATCH_MAX_DEFAULT = 64
/** …or when the first of them has waited as long as it may (`add`'s `waitMs`; by default this long). */
export const SETTLE_FLUSH_DEFAULT_MS = 3
/** Flushes in flight at once; further settlements wait (and so batch up) behind them. */
export const SETTLE_PARALLEL_DEFAULT = 2
/** At shutdown, a reachable but slow database gets this many times the deadline. */
export const SHUTDOWN_SLOW_DATABASE_FACTOR = 5

type Queued = { item: Settlement; chain: boolean; following?: FollowingDelivery; started?: boolean; flushBy: number; done: (next: ClaimedDelivery | null) => void }

/**
 * Collects finished attempts and records them in batches: one transaction, one guarded
 * `UPDATE … FROM jsonb_populate_record`, one multi-row ledger insert per flush. Up to
 * `parallel` flushes run at once (each locks its endpoint rows in id order, and no two hold the
 * same delivery), so a flush waiting on its commit does not hold back the next batch.
 *
 * A flush that fails is retried by its error's class (`databaseRetryDelayMs`): through an
 * outage it is kept and written when the database is back, however long that takes while the
 * process runs. The buffer is bounded without a limit of its own: `add` resolves only once the
 * outcome is written, and until then the attempt holds its dispatcher slot, so no more than the
 * concurrency can wait. On shutdown (`abandon`) what is still unwritten is logged with its
 * delivery ids; those deliveries are rescued after their lease, and the rescuer's
 * `interrupted` attempt is their record. A crash loses the same (at-least-once).
 */
export class SettleBatcher {
  readonly #db: Db
  readonly #clock: Clock
  readonly #logger: Logger
  readonly #max: number
  readonly #flushMs: number
  readonly #parallel: number
  #queue: Queued[] = []
  #timer: NodeJS.Timeout | null = null
  /** When the timer fires (performance.now()): the earliest deadline of what is queued. */
  #timerAt = Infinity
  #writes = new Set<Promise<void>>()
  /** Batches being written (or waiting to retry), so an abandon can name them. */
  #writing = new Set<Queued[]>()
  #abandoned = false
  #wakeRetries = new Set<() => void>()
  readonly #health: DatabaseHealth

  constructor(opts: {
    db: Db
    clock: Clock
    logger: Logger
    max?: number
    flushMs?: number
    parallel?: number
    health?: DatabaseHealth
    /** Who takes a released endpoint's next due delivery in the settle's transaction (`add(…, { chain: true })`). */
    claimNext?: { actor: string; leaseMs: number }
    observer?: DispatcherObserver
  }) {
    this.#db = opts.db
    this.#clock = opts.clock
    this.#logger = opts.logger
    this.#max = opts.max ?? SETTLE_BATCH_MAX_DEFAULT
    this.#flushMs = opts.flushMs ?? SETTLE_FLUSH_DEFAULT_MS
    this.#parallel = Math.max(1, opts.parallel ?? SETTLE_PARALLEL_DEFAULT)
    this.#health = opts.health ?? new DatabaseHealth(opts.logger)
    this.#claimNext = opts.claimNext ?? null
    this.#observer = opts.observer ?? silentObserver
  }

  readonly #observer: DispatcherObserver

  readonly #claimNext: { actor: string; leaseMs: number } | null

  /** Settles dropped because their claim was lost (each is a `delivery.settle_dropped` entry). */
  droppedTotal = 0

  /** Outcomes given up on (shutdown during an outage, or an error that is not transient). */
  unwrittenTotal = 0

  /** Settlements accepted and not yet written. */
  get pending(): number {
    let n = this.#queue.length
    for (const b of this.#writing) n += b.length
    return n
  }

  /**
   * Queues a settlement; resolves once it is recorded (or dropped as stale, or given up). With
   * `chain`, the endpoint's next due delivery is claimed in the same write and resolved: the
   * `following` its claim read when there is one (`started`: the worker already sent it).
   * `waitMs`: how long it may wait for others to share its transaction (core `settleWaitMs`;
   * default the batcher's flush interval).
   */
  add(item: Settlement, options: { chain?: boolean; following?: FollowingDelivery | undefined; started?: boolean; waitMs?: number } = {}): Promise<ClaimedDelivery | null> {
    if (this.#abandoned) {
      this.#giveUp([{ item, chain: false, flushBy: 0, done: () => {} }], 'shutting down')
      return Promise.resolve(null)
    }
    return new Promise((done) => {
      const chain = (options.chain ?? false) && this.#claimNext !== null
      const flushBy = performance.now() + (options.waitMs ?? this.#flushMs)
      this.#queue.push({ item, chain, ...(chain && options.following ? { following: options.following, started: options.started ?? false } : {}), flushBy, done })
      if (this.#queue.length >= this.#max) this.#kick()
      else this.#flushBy(flushBy)
    })
  }

  /** Makes sure a flush starts by `at` (an earlier deadline moves the timer forward). */
  #flushBy(at: number): void {
    if (this.#timer && this.#timerAt <= at) return
    if (this.#timer) clearTimeout(this.#timer)
    this.#timerAt = at
    this.#timer = setTimeout(() => this.#kick(), Math.max(0, at - performance.now()))
  }

  /**
   * Records everything queued so far. With a deadline (shutdown), what is still unwritten when it
   * passes is abandoned: logged with its delivery ids, left to the rescuer.
   */
  async flush(options: { deadlineMs?: number } = {}): Promise<void> {
    const started = performance.now()
    for (;;) {
      this.#kick()
      if (this.#writes.size === 0 && this.#queue.length === 0) return
      const written = Promise.all(this.#writes).then(() => true)
      if (options.deadlineMs === undefined) {
        await written
        continue
      }
      // The deadline is for a database that does not answer: one that is merely slow (a loaded
      // host) gets up to SHUTDOWN_SLOW_DATABASE_FACTOR times as long before outcomes are given up.
      const limit = options.deadlineMs * (this.#health.degraded ? 1 : SHUTDOWN_SLOW_DATABASE_FACTOR)
      const left = limit - (performance.now() - started)
      let timer: NodeJS.Timeout | undefined
      const done = await Promise.race([written, new Promise<false>((r) => (timer = setTimeout(() => r(false), Math.max(0, Math.min(left, 250)))))])
      clearTimeout(timer)
      if (done) continue
      if (performance.now() - started >= limit) {
        return this.abandon(this.#health.degraded ? 'the shutdown deadline passed with the database unreachable' : 'the shutdown deadline passed with the database too slow')
      }
    }
  }

  /**
   * Gives up on everything not yet written: no more retries; each waiting batch is logged once
   * (`completer:unwritten`, with the delivery ids). A write already in a transaction may still
   * commit (its outcome is then recorded after all); nothing waits for it.
   */
  abandon(reason = 'shutting down'): void {
    this.#abandoned = true
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
    this.#timerAt = Infinity
    const queued = this.#queue.splice(0)
    if (queued.length > 0) this.#giveUp(queued, reason)
    for (const batch of [...this.#writing]) {
      this.#writing.delete(batch)
      this.#giveUp(batch, reason)
    }
    for (const wake of this.#wakeRetries) wake()
  }

  #giveUp(batch: Queued[], reason: string, err?: unknown): void {
    this.unwrittenTotal += batch.length
    this.#logger.error(
      { delivery_ids: batch.map((b) => b.item.delivery.id), count: batch.length, reason, ...(err ? { err } : {}) },
      'completer:unwritten',
    )
    batch.forEach((b) => b.done(null))
  }

  /** Starts a flush of what is queued, unless every lane is busy (a finishing one calls again). */
  #kick(): void {
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
    this.#timerAt = Infinity
    while (this.#writes.size < this.#parallel && this.#queue.length > 0) {
      const batch = this.#queue.splice(0, this.#max)
      const write: Promise<void> = this.#write(batch).finally(() => {
        this.#writes.delete(write)
        this.#afterWrite()
      })
      this.#writes.add(write)
    }
  }

  /**
   * A lane is free again: what waited behind the busy lanes (its time is up) goes now, what may
   * still wait for company keeps its timer.
   */
  #afterWrite(): void {
    if (this.#queue.length === 0) return
    const due = Math.min(...this.#queue.map((q) => q.flushBy))
    if (this.#queue.length >= this.#max || due <= performance.now()) this.#kick()
    else this.#flushBy(due)
  }

  async #write(batch: Queued[]): Promise<void> {
    this.#writing.add(batch)
    for (let failures = 1; ; failures++) {
      try {
        const items = batch.map((b) => b.item)
        const chained = new Set(batch.filter((b) => b.chain).map((b) => b.item.delivery.endpoint_id))
        const following = new Map(batch.flatMap((b) => (b.following ? [[b.item.delivery.endpoint_id, b.following] as const] : [])))
        const sentAhead = new Map(batch.flatMap((b) => (b.following && b.started ? [[b.item.delivery.endpoint_id, b.following.delivery.id] as const] : [])))
        const next = { actor: this.#claimNext?.actor ?? '', leaseMs: this.#claimNext?.leaseMs ?? 0, endpointIds: chained, started: sentAhead, following }
        const started = performance.now()
        const { recorded, claimed, entries } = await deliverySettleBatch(this.#db, items, this.#clock.now(), next)
        this.#health.succeeded()
        this.#observer.settled(items.length, entries, performance.now() - started)
        // Abandoned meanwhile: already logged as unwritten, and its waiters released.
        if (!this.#writing.delete(batch)) return
        const dropped = items.filter((i) => !recorded.has(i.delivery.id))
        if (dropped.length > 0) {
          this.droppedTotal += dropped.length
          this.#logger.warn({ delivery_ids: dropped.map((i) => i.delivery.id), count: dropped.length }, 'completer:settle_dropped')
        }
        const nextOf = new Map(claimed.map((c) => [c.delivery.endpoint_id, c]))
        batch.forEach((b) => b.done(b.chain ? (nextOf.get(b.item.delivery.endpoint_id) ?? null) : null))
        return
      } catch (err) {
        if (!this.#writing.has(batch)) return
        const cls = this.#health.failed(err, 'settle')
        const delay = databaseRetryDelayMs(cls, failures)
        if (delay === null) {
          // Not transient: leave them to the rescuer (their leases expire and they are retried).
          this.#writing.delete(batch)
          return this.#giveUp(batch, `${cls} database error after ${failures} tries`, err)
        }
        // An outage is logged once, by the health tracker; anything else per try.
        if (cls !== 'unavailable') this.#logger.warn({ err, failures, size: batch.length }, 'completer:flush_retry')
        await new Promise<void>((resolve) => {
          const wake = () => (clearTimeout(t), this.#wakeRetries.delete(wake), resolve())
          const t = setTimeout(wake, delay)
          this.#wakeRetries.add(wake)
        })
        if (!this.#writing.has(batch)) return
      }
    }
  }
}
