import { sql } from 'kysely'
import { systemClock, type Clock, type Logger } from '@hookledger/core'
import type { Db } from './database.js'

/** How often the offset to the database's clock is measured again (an NTP step on the host is corrected within this). */
export const DATABASE_CLOCK_RESAMPLE_DEFAULT_MS = 10_000

/**
 * The database's clock, read without a query per call: the host clock plus the offset measured
 * against PostgreSQL's `clock_timestamp()` (at the midpoint of the round trip), measured again
 * every few seconds. Every process sharing a database then agrees on "now" within a round trip,
 * however wrong its own clock is: a worker whose host runs 30 s fast does not rescue the others'
 * deliveries as soon as they are claimed, nor lease an endpoint for 30 s too long.
 *
 * The composition root gives every rule this clock; tests give them a FakeClock. While the
 * database is unreachable the last offset is kept.
 */
export class DatabaseClock implements Clock {
  readonly #db: Db
  readonly #host: Clock
  readonly #log: Logger | undefined
  #offsetMs = 0
  #timer: NodeJS.Timeout | null = null

  private constructor(db: Db, host: Clock, log: Logger | undefined) {
    this.#db = db
    this.#host = host
    this.#log = log
  }

  /** Measures the offset once (the database must answer) and keeps it current until `stop()`. */
  static async start(db: Db, options: { host?: Clock; resampleMs?: number; logger?: Logger } = {}): Promise<DatabaseClock> {
    const clock = new DatabaseClock(db, options.host ?? systemClock, options.logger)
    await clock.sample()
    const every = options.resampleMs ?? DATABASE_CLOCK_RESAMPLE_DEFAULT_MS
    const tick = () => {
      clock.#timer = setTimeout(() => {
        clock.sample().catch(() => {}).finally(() => clock.#timer !== null && tick())
      }, every)
      clock.#timer.unref()
    }
    tick()
    return clock
  }

  /** How far the database's clock is ahead of the host's, in ms (negative: behind). */
  get offsetMs(): number {
    return this.#offsetMs
  }

  now(): Date {
    return new Date(this.#host.now().getTime() + this.#offsetMs)
  }

  /** Measures the offset again. */
  async sample(): Promise<void> {
    const before = this.#host.now().getTime()
    const { rows } = await sql<{ ms: string }>`select (extract(epoch from clock_timestamp()) * 1000)::bigint::text as ms`.execute(this.#db)
    const after = this.#host.now().getTime()
    const offset = Number(rows[0]!.ms) - (before + after) / 2
    if (Math.abs(offset - this.#offsetMs) > 1_000) this.#log?.warn({ offset_ms: Math.round(offset) }, 'clock:host_differs_from_database')
    this.#offsetMs = offset
  }

  stop(): void {
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
  }
}
