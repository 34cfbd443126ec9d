import { databaseRetryDelayMs, type Clock, type EventCatalog, type Logger } from '@hookledger/core'
import { fanoutRun, type Db, type DeliveryClaimParams, type EmbedAdmits, type FanoutRunResult } from '@hookledger/store'
import type { DatabaseHealth } from './database-health.js'
import type { DispatcherObserver } from './dispatcher-observer.js'
import { claimUnderHold } from './slot-holds.js'

/** Events fanned out per transaction (at most: a batch also stops at FANOUT_DELIVERIES_CAP). */
export const FANOUT_BATCH = 50
/** One fan-out pass runs at most this long; the fan-out loop then goes on. */
export const FANOUT_PASS_BUDGET_MS = 250

/**
 * Deliveries enqueued between two looks at the planner's statistics. A burst into tables planned
 * when they were small keeps those plans until the tables are analyzed (migration 0012).
 */
export const STATISTICS_REFRESH_AFTER = 1_000

/** What a fan-out pass needs. */
export interface FanoutPassDeps {
  readonly db: Db
  readonly clock: Clock
  readonly catalog: EventCatalog
  readonly embedAdmits: EmbedAdmits
  /** `worker:<id>`. */
  readonly actor: string
  readonly observer: DispatcherObserver
  /** When given, each fan-out transaction also claims into free slots (store `FanoutParams.claim`). */
  readonly claims?: FanoutClaims
  /** Whose turn each batch is (kept across passes by the caller); default: every batch the aged event's. */
  readonly turns?: FanoutTurns
}

/**
 * Whose turn the next fan-out batch is. The oldest waiting event, once aged, gets a batch of its
 * own if the cost order would pass it over (store `FanoutParams.agedFirst`); the batch after
 * such a batch goes by cost. So an event to thousands of endpoints is never held back for ever,
 * and the cheap events wait for at most one of its batches, never ride in one.
 */
export class FanoutTurns {
  #agedFirst = true

  get agedFirst(): boolean {
    return this.#agedFirst
  }

  /** After a committed batch. */
  after(batch: { readonly agedAlone: boolean }): void {
    this.#agedFirst = !batch.agedAlone
  }
}

/** The dispatcher's side of the fan-out's claims. */
export interface FanoutClaims {
  /** The claim's parameters, its free slots held until `release` (null: none free, or stopping). */
  hold(): { readonly params: Omit<DeliveryClaimParams, 'now' | 'actor'>; release(): void } | null
  /** Its transaction committed what its claim leased: send it. */
  claimed(result: FanoutRunResult): void
}

/**
 * Fans out every waiting event, a batch a transaction; with `budgetMs`, for about that long
 * (`more`: events are left — the fan-out loop's passes, so it looks between them whether it is
 * stopping).
 */
export async function fanoutPass(deps: FanoutPassDeps, budgetMs = Infinity): Promise<FanoutPassResult> {
  let events = 0
  let enqueued = 0
  let left = false
  const started = performance.now()
  for (;;) {
    // The claim's slots are held from the moment it is asked for until what it claimed is in flight.
    let release = () => {}
    const claim = deps.claims && (() => {
      const slots = deps.claims!.hold()
      if (slots) release = slots.release
      return slots?.params ?? null
    })
    const r = await claimUnderHold(
      { release: () => release() },
      () => fanoutRun(deps.db, {
        now: deps.clock.now(), catalog: deps.catalog, embedAdmits: deps.embedAdmits, actor: deps.actor, limit: FANOUT_BATCH,
        agedFirst: deps.turns?.agedFirst ?? true, ...(claim ? { claim } : {}),
      }),
      (result) => result.claim && deps.claims?.claimed(result),
    )
    deps.turns?.after(r)
    events += r.events
    enqueued += r.enqueued
    left ||= r.left
    if (r.events > 0) deps.observer.fannedOut?.(r.events, r.enqueued)
    // Nothing else was waiting (or another worker holds it); or the pass has run its time.
    if (!r.more || performance.now() - started >= budgetMs) return { events, enqueued, more: r.more, left }
  }
}

/** What a fan-out pass did. */
export interface FanoutPassResult {
  readonly events: number
  readonly enqueued: number
  /** Events are left (the pass ran its time). */
  readonly more: boolean
  /** Deliveries were enqueued that its claims did not lease: the producer may claim them. */
  readonly left: boolean
}

/** What the loop runs and whom it tells. */
export interface FanoutLoopDeps {
  /** One fan-out pass: every waiting event, or as many as its time budget allows (`more`). */
  readonly run: () => Promise<FanoutPassResult>
  /**
   * After every STATISTICS_REFRESH_AFTER deliveries enqueued: brings the planner's statistics
   * up to a burst (store statisticsRefresh), naming the tables it analyzed.
   */
  readonly refreshStatistics?: () => Promise<string[]>
  /** Deliveries were enqueued that the fan-out did not claim itself: the producer may claim them. */
  readonly fannedOut: () => void
  readonly health: DatabaseHealth
  readonly log: Logger
  /** The fallback poll when no NOTIFY says an event is waiting. */
  readonly pollMs: number
}

/**
 * The fan-out, in a loop of its own beside the producer's claims (issue 24): a fan-out
 * transaction of thousands of deliveries no longer holds back the claims of every owner while it
 * runs. It runs when told an event is waiting (`hint`: the events NOTIFY) and at least once per
 * poll interval (a lost NOTIFY costs at most that); while events are left it goes on at once.
 */
export class FanoutLoop {
  #running = false
  #hinted = true
  #wake: (() => void) | null = null
  #loop: Promise<void> | null = null
  #enqueuedSinceRefresh = 0

  constructor(private readonly deps: FanoutLoopDeps) {}

  start(): void {
    if (this.#running) return
    this.#running = true
    this.#loop = this.#run()
  }

  /** An event may be waiting: fan out now. */
  hint(): void {
    this.#hinted = true
    this.#wake?.()
  }

  async stop(): Promise<void> {
    this.#running = false
    this.#wake?.()
    await this.#loop
  }

  /** Never fails the fan-out: statistics a little late are autovacuum's to catch up. */
  async #refreshStatistics(): Promise<void> {
    this.#enqueuedSinceRefresh = 0
    try {
      const tables = (await this.deps.refreshStatistics?.()) ?? []
      if (tables.length > 0) this.deps.log.info({ tables }, 'database:statistics_refreshed')
    } catch (err) {
      this.deps.log.warn({ err }, 'database:statistics_refresh_failed')
    }
  }

  async #run(): Promise<void> {
    let failures = 0
    while (this.#running) {
      this.#hinted = false
      let waitMs = this.deps.pollMs
      try {
        const r = await this.deps.run()
        failures = 0
        this.deps.health.succeeded()
        if (r.left) this.deps.fannedOut()
        this.#enqueuedSinceRefresh += r.enqueued
        if (this.#enqueuedSinceRefresh >= STATISTICS_REFRESH_AFTER) await this.#refreshStatistics()
        if (r.more) continue
      } catch (err) {
        // As the producer: an outage backs off (logged once, by the tracker); other errors are logged.
        failures++
        const cls = this.deps.health.failed(err, 'fanout')
        if (cls !== 'unavailable') this.deps.log.error({ err, failures }, 'fanout:error')
        const delay = databaseRetryDelayMs(cls, failures)
        if (delay === null) failures = 0
        waitMs = delay ?? this.deps.pollMs
      }
      if (!this.#running) break
      if (this.#hinted && failures === 0) continue
      await new Promise<void>((resolve) => {
        const t = setTimeout(() => {
          this.#wake = null
          resolve()
        }, waitMs)
        this.#wake = () => {
          clearTimeout(t)
          this.#wake = null
          resolve()
        }
      })
    }
  }
}
