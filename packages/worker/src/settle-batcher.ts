import type { Clock, Logger } from '@hookledger/core'
import { deliverySettle, type Db, type Settlement } from '@hookledger/store'

/** Flush when this many settlements are waiting… */
export const SETTLE_BATCH_MAX_DEFAULT = 64
/** …or this long after the first one arrived. */
export const SETTLE_FLUSH_DEFAULT_MS = 3

/**
 * Collects finished attempts and records them in batches: one transaction, one guarded
 * `UPDATE … FROM jsonb_populate_recordset`, one multi-row ledger insert per flush. A failed flush
 * is retried; a crash before a flush loses only acks, so those deliveries are rescued and sent
 * again (at-least-once).
 */
export class SettleBatcher {
  readonly #db: Db
  readonly #clock: Clock
  readonly #logger: Logger
  readonly #max: number
  readonly #flushMs: number
  #queue: { item: Settlement; done: () => void }[] = []
  #timer: NodeJS.Timeout | null = null
  #flushing: Promise<void> = Promise.resolve()

  constructor(opts: { db: Db; clock: Clock; logger: Logger; max?: number; flushMs?: number }) {
    this.#db = opts.db
    this.#clock = opts.clock
    this.#logger = opts.logger
    this.#max = opts.max ?? SETTLE_BATCH_MAX_DEFAULT
    this.#flushMs = opts.flushMs ?? SETTLE_FLUSH_DEFAULT_MS
  }

  /** Queues a settlement; resolves once it is recorded (or dropped as stale). */
  add(item: Settlement): Promise<void> {
    return new Promise((done) => {
      this.#queue.push({ item, done })
      if (this.#queue.length >= this.#max) void this.flush()
      else this.#timer ??= setTimeout(() => void this.flush(), this.#flushMs)
    })
  }

  /** Records everything queued so far. */
  flush(): Promise<void> {
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
    const batch = this.#queue
    this.#queue = []
    if (batch.length === 0) return this.#flushing
    this.#flushing = this.#flushing.then(() => this.#write(batch))
    return this.#flushing
  }

  async #write(batch: { item: Settlement; done: () => void }[]): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        const items = batch.map((b) => b.item)
        await this.#db.transaction().execute((trx) => deliverySettle(trx, items, this.#clock.now()))
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
