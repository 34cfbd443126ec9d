import type { Clock, Logger } from '@hookledger/core'
import { deliverySettle, type Db, type Settlement } from '@hookledger/store'

/** Flush when this many settlements are waiting… */
export const SETTLE_BATCH_MAX_DEFAULT = 64
/** …or this long after the first one arrived. */
export const SETTLE_FLUSH_DEFAULT_MS = 3
/** Flushes in flight at once; further settlements wait (and so batch up) behind them. */
export const SETTLE_PARALLEL_DEFAULT = 2

type Queued = { item: Settlement; done: () => void }

/**
 * Collects finished attempts and records them in batches: one transaction, one guarded
 * `UPDATE … FROM jsonb_populate_record`, one multi-row ledger insert per flush. Up to
 * `parallel` flushes run at once (each locks its endpoint rows in id order, and no two hold the
 * same delivery), so a flush waiting on its commit does not hold back the next batch. A failed
 * flush is retried; a crash before a flush loses only acks, so those deliveries are rescued and
 * sent again (at-least-once).
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
  #writes = new Set<Promise<void>>()

  constructor(opts: {
    db: Db
    clock: Clock
    logger: Logger
    max?: number
    flushMs?: number
    parallel?: number
  }) {
    this.#db = opts.db
    this.#clock = opts.clock
    this.#logger = opts.logger
    this.#max = opts.max ?? SETTLE_BATCH_MAX_DEFAULT
    this.#flushMs = opts.flushMs ?? SETTLE_FLUSH_DEFAULT_MS
    this.#parallel = Math.max(1, opts.parallel ?? SETTLE_PARALLEL_DEFAULT)
  }

  /** Settles dropped because their claim was lost (each is a `delivery.settle_dropped` entry). */
  droppedTotal = 0

  /** Queues a settlement; resolves once it is recorded (or dropped as stale). */
  add(item: Settlement): Promise<void> {
    return new Promise((done) => {
      this.#queue.push({ item, done })
      if (this.#queue.length >= this.#max) this.#kick()
      else this.#timer ??= setTimeout(() => this.#kick(), this.#flushMs)
    })
  }

  /** Records everything queued so far. */
  async flush(): Promise<void> {
    for (;;) {
      this.#kick()
      if (this.#writes.size === 0 && this.#queue.length === 0) return
      await Promise.all(this.#writes)
    }
  }

  /** Starts a flush of what is queued, unless every lane is busy (a finishing one calls again). */
  #kick(): void {
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
    while (this.#writes.size < this.#parallel && this.#queue.length > 0) {
      const batch = this.#queue.splice(0, this.#max)
      const write: Promise<void> = this.#write(batch).finally(() => {
        this.#writes.delete(write)
        if (this.#queue.length > 0) this.#kick()
      })
      this.#writes.add(write)
    }
  }

  async #write(batch: Queued[]): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        const items = batch.map((b) => b.item)
        const recorded = await this.#db.transaction().execute((trx) => deliverySettle(trx, items, this.#clock.now()))
        const dropped = items.filter((i) => !recorded.has(i.delivery.id))
        if (dropped.length > 0) {
          this.droppedTotal += dropped.length
          this.#logger.warn({ delivery_ids: dropped.map((i) => i.delivery.id), count: dropped.length }, 'completer:settle_dropped')
        }
        batch.forEach((b) => b.done())
        return
      } catch (err) {
        this.#logger.error({ err, attempt, size: batch.length }, 'completer:flush_error')
        if (attempt >= 5) {
          // Leave them to the rescuer: their leases expire and they are retried.
          batch.forEach((b) => b.done())
          return
        }
        await new Promise((r) => setTimeout(r, 50 * attempt))
      }
    }
  }
}
