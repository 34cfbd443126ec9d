import { JOB_TIMEOUT_MS, DEFAULT_DB_SCHEMA, databaseRetryDelayMs, deliveriesChannel, eventsChannel, leaseLeftToSend, silentLogger, yieldedAfter } from '@hookledger/core'
import type { LedgerEntry, Logger, SecretBox } from '@hookledger/core'
import { deliveryClaim, statisticsRefresh, type ClaimedDelivery, type OwnerWeight, type Settlement } from '@hookledger/store'
import { DatabaseHealth } from './database-health.js'
import { maintenancePass, scheduleMaintenance, type MaintenanceReport } from './dispatcher-maintenance.js'
import { silentObserver, type DispatcherObserver } from './dispatcher-observer.js'
import { executeDelivery, type ExecutorDeps } from './delivery-executor.js'
import { endpointTurn } from './endpoint-turn.js'
import { SettleBatcher } from './settle-batcher.js'
import { rememberingSecretBox } from './remembered-secrets.js'
import { settledWithin } from './settled-within.js'
import { OwnerSlots } from './owner-slots.js'
import { FANOUT_PASS_BUDGET_MS, FanoutLoop, FanoutTurns, fanoutPass, type FanoutClaims, type FanoutPassResult } from './fanout-loop.js'
import { SlotHolds, claimUnderHold, type SlotHold } from './slot-holds.js'
import type { DispatcherOptions, StepReport } from './dispatcher-options.js'
import { idleWaitMs } from './producer-wait.js'

export const CONCURRENCY_DEFAULT = 64
export const POLL_INTERVAL_DEFAULT_MS = 1_000
export const MAINTENANCE_INTERVAL_DEFAULT_MS = 5_000
export const SHUTDOWN_GRACE_DEFAULT_MS = 15_000
/** After the grace period, how long shutdown keeps trying to write outcomes to an unreachable database. */
export const SHUTDOWN_SETTLE_DEADLINE_MS = 2_000

export type { DispatcherOptions, StepReport }

/**
 * The delivery engine of one process: fan-out, a producer that claims only as many deliveries
 * as it has free slots, executors that POST with no transaction open, and a batching completer.
 * NOTIFY wakes it; a jittered poll is the fallback and is enough on its own. Maintenance
 * (rescuer, pruner, retention) runs on an interval; several processes may run it at once safely.
 */
export class Dispatcher {
  readonly #o: DispatcherOptions
  readonly #log: Logger
  readonly #actor: string
  readonly #secrets: SecretBox
  readonly #settler: SettleBatcher
  readonly #concurrency: number
  #inflight = new Set<Promise<void>>()
  /** Free slots held by the claims in progress (the producer's, the fan-out's: slot-holds.ts). */
  readonly #holds = new SlotHolds(() => this.#concurrency - this.#inflight.size)
  /** The slots per owner, and whose turns give theirs back (fair share across owners). */
  readonly #slots: OwnerSlots
  /** The POSTs of those, until answered (shutdown waits for these, not for their settles). */
  #posting = new Set<Promise<void>>()
  #running = false
  #stopping: Promise<void> | null = null
  #wake: (() => void) | null = null
  #nudged = false
  /** Endpoints whose turns gave their slot up to others waiting and were not claimed since, oldest first (claimed last, in that order). */
  #yielded = new Set<string>()
  #loop: Promise<void> | null = null
  /** The fan-out, in a loop of its own beside the claims (fanout-loop.ts). */
  readonly #fanout: FanoutLoop
  /** Whose turn its batches are: the aged event's, then the cost order's (fanout-loop.ts). */
  readonly #fanoutTurns = new FanoutTurns()
  #maintenance: { stop(): void } | null = null
  readonly #health: DatabaseHealth
  readonly #observer: DispatcherObserver
  /** When the producer last finished a pass (performance.now()): readiness asks whether it is alive. */
  #lastPassAt = performance.now()
  /** The time the last claim looked at (the idle wait counts endpoints ready after it). */
  #lastClaimAt: Date | null = null

  constructor(options: DispatcherOptions) {
    this.#o = options
    this.#log = options.logger ?? silentLogger
    this.#actor = `worker:${options.workerId}`
    this.#secrets = rememberingSecretBox(options.secretBox)
    this.#concurrency = options.concurrency ?? CONCURRENCY_DEFAULT
    this.#slots = new OwnerSlots(this.#concurrency, options.turnShare)
    this.#health = options.health ?? new DatabaseHealth(this.#log)
    this.#observer = options.observer ?? silentObserver
    this.#fanout = new FanoutLoop({
      run: () => this.fanoutOnce(FANOUT_PASS_BUDGET_MS, this.#fanoutClaims),
      refreshStatistics: () => statisticsRefresh(options.db),
      fannedOut: () => this.#wakeProducer(),
      health: this.#health,
      log: this.#log,
      pollMs: options.pollIntervalMs ?? POLL_INTERVAL_DEFAULT_MS,
    })
    this.#settler = new SettleBatcher({
      observer: this.#observer,
      db: options.db,
      clock: options.clock,
      logger: this.#log,
      health: this.#health,
      claimNext: { actor: this.#actor, leaseMs: options.leaseMs ?? options.jobTimeoutMs ?? JOB_TIMEOUT_MS },
    })
  }

  /** Outcomes this process could not apply because their claim was gone (each is in the ledger). */
  get settlesDropped(): number {
    return this.#settler.droppedTotal
  }

  /** Outcomes given up on unwritten (shutdown during an outage): their deliveries are rescued. */
  get settlesUnwritten(): number {
    return this.#settler.unwrittenTotal
  }

  /** Outcomes waiting to be written (through an outage, until the database is back). */
  get settlesPending(): number {
    return this.#settler.pending
  }

  /** Milliseconds since the producer last finished a pass (failed passes count: it is alive). */
  get msSinceLastPass(): number {
    return this.#running ? performance.now() - this.#lastPassAt : Infinity
  }

  get health(): DatabaseHealth {
    return this.#health
  }

  /** How long a claim holds its delivery and endpoint (undefined: the store's default). */
  get #leaseMs(): number | undefined {
    return this.#o.leaseMs ?? this.#o.jobTimeoutMs
  }

  /** Owners whose turns now give their slot back after each delivery (fair share; suspended owners). */
  get ownersYielding(): ReadonlySet<string> {
    return this.#slots.yielding
  }

  get inflight(): number {
    return this.#inflight.size
  }

  /** The producer waits for a wake (NOTIFY, a freed slot, a nudge) or its poll: no pass is running. */
  get producerPaused(): boolean {
    return this.#wake !== null
  }

  async start(): Promise<void> {
    if (this.#running) return
    this.#running = true
    const schema = this.#o.schema ?? DEFAULT_DB_SCHEMA
    await this.#o.notifier?.listen(eventsChannel(schema), () => this.#fanout.hint())
    await this.#o.notifier?.listen(deliveriesChannel(schema), () => this.#wakeProducer())
    this.#fanout.start()
    this.#loop = this.#run()
    this.#maintenance = scheduleMaintenance(this.#o.maintenanceIntervalMs ?? MAINTENANCE_INTERVAL_DEFAULT_MS, () => this.maintenanceOnce(), (err) => {
      // Through an outage the next tick is the retry; only other errors are logged each time.
      if (this.#health.failed(err, 'maintenance') !== 'unavailable') this.#log.error({ err }, 'maintenance:error')
    })
  }

  /** Something may be waiting: fans out and claims now (what the NOTIFYs do). */
  nudge(): void {
    this.#fanout.hint()
    this.#wakeProducer()
  }

  /** Wakes the producer early (new deliveries, a freed slot). */
  #wakeProducer(): void {
    this.#nudged = true
    this.#wake?.()
  }

  /**
   * Stops claiming, lets in-flight POSTs finish (bounded by the grace period, which is the job
   * timeout), records their outcomes, and resolves. Safe to call repeatedly or before start.
   */
  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      this.#running = false
      this.#maintenance?.stop()
      this.#wake?.()
      await Promise.all([this.#loop, this.#fanout.stop()])
      await settledWithin(Promise.all(this.#posting), this.#o.shutdownGraceMs ?? SHUTDOWN_GRACE_DEFAULT_MS)
      await this.#settler.flush({ deadlineMs: SHUTDOWN_SETTLE_DEADLINE_MS })
      // A pipelined attempt's outcome joins the buffer only once the settle before it returned
      // its claim (that flush): let those turns finish too, as briefly.
      await settledWithin(Promise.all(this.#inflight), SHUTDOWN_SETTLE_DEADLINE_MS)
      await this.#settler.flush({ deadlineMs: SHUTDOWN_SETTLE_DEADLINE_MS })
      // An attempt that outlives the grace period has its outcome logged as unwritten.
      this.#settler.abandon('stopped before the attempt finished')
    })()
    return this.#stopping
  }

  async #run(): Promise<void> {
    let failures = 0
    while (this.#running) {
      this.#nudged = false
      let busy = false
      let retryInMs: number | null = null
      try {
        busy = await this.#step()
        failures = 0
        this.#health.succeeded()
      } catch (err) {
        // A lost connection or a conflict fails this pass only; it runs again after a delay by
        // the error's class (an outage backs off to 5 s and is logged once, by the tracker).
        failures++
        const cls = this.#health.failed(err, 'producer')
        if (cls !== 'unavailable') this.#log.error({ err, failures }, 'producer:step_error')
        const delay = databaseRetryDelayMs(cls, failures)
        // Given up on this run of failures: wait a poll interval, then count afresh.
        if (delay === null) failures = 0
        retryInMs = delay ?? this.#o.pollIntervalMs ?? POLL_INTERVAL_DEFAULT_MS
      }
      this.#lastPassAt = performance.now()
      if (!this.#running) break
      if (retryInMs !== null) {
        // A nudge (LISTEN reconnected, so the database is back) ends the wait early.
        await this.#pause(retryInMs)
        continue
      }
      if (busy && this.#nudged) continue
      if (busy && this.#inflight.size < this.#concurrency) continue
      const poll = this.#o.pollIntervalMs ?? POLL_INTERVAL_DEFAULT_MS
      const full = this.#inflight.size >= this.#concurrency
      const wait = full || this.#health.degraded ? poll : await idleWaitMs(this.#o.db, this.#o.clock, this.#lastClaimAt, poll * (0.9 + Math.random() * 0.2))
      if (!this.#running) break
      await this.#pause(wait)
    }
  }

  /** Waits `ms`, or until nudged; true if the time ran out. */
  #pause(ms: number): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      const t = setTimeout(() => {
        this.#wake = null
        resolve(true)
      }, ms)
      this.#wake = () => {
        clearTimeout(t)
        this.#wake = null
        resolve(false)
      }
      if (this.#nudged) this.#wake()
    })
  }

  /**
   * One producer pass: claim into free slots (the fan-out runs in its own loop). True if it did
   * anything. While every slot is taken it looks whether an owner waits below its share.
   */
  async #step(): Promise<boolean> {
    const now = this.#o.clock.now()
    this.#lastClaimAt = now
    const hold = this.#holds.hold()
    if (!hold) {
      // Passes while full come from NOTIFY (new events) and the poll, so this look is cheap.
      await this.#slots.lookWhileFull(this.#o.db, now)
      return false
    }
    const started = performance.now()
    const { claimed, settled, ownersWaiting: waiting, endpointsWaiting } = await claimUnderHold(
      hold,
      () => deliveryClaim(this.#o.db, { now, actor: this.#actor, ...this.#claimParams(hold) }),
      (r) => this.#launchClaimed(r.claimed, r.settled, r.entries, performance.now() - started),
    )
    await this.#slots.afterClaim(this.#o.db, this.#concurrency - this.#inflight.size, waiting, endpointsWaiting)
    return claimed.length > 0 || settled > 0
  }

  /** A claim's parameters for the slots it holds. */
  #claimParams(hold: SlotHold) {
    return {
      limit: hold.limit,
      picked: hold.picked,
      yielded: this.#yielded,
      sharesOf: (owners: readonly OwnerWeight[]) => this.#slots.sharesOf(owners, hold.limit, performance.now()),
      ...(this.#leaseMs !== undefined ? { leaseMs: this.#leaseMs } : {}),
    }
  }

  /** The fan-out's claims: into the free slots, while running; what they claimed is sent once committed. */
  readonly #fanoutClaims: FanoutClaims = {
    hold: () => {
      const hold = this.#running ? this.#holds.hold() : null
      return hold && { params: this.#claimParams(hold), release: hold.release }
    },
    claimed: ({ claimed, claim }) => {
      this.#launchClaimed(claimed, claim!.settled, claim!.entries, claim!.ms)
      // As after the producer's claims: who waits below its share, and (once a second) whether an owner served was suspended.
      this.#slots.afterClaim(this.#o.db, this.#concurrency - this.#inflight.size, claim!.ownersWaiting, claim!.endpointsWaiting)
        .catch((err) => this.#health.failed(err, 'fanout') !== 'unavailable' && this.#log.error({ err }, 'fanout:after_claim_error'))
    },
  }

  /** Counts a claim and sends what it claimed. */
  #launchClaimed(claimed: readonly ClaimedDelivery[], settled: number, entries: readonly LedgerEntry[], ms: number): void {
    if (claimed.length + settled > 0) this.#observer.claimed(claimed.length + settled, entries, ms)
    this.#yielded = yieldedAfter(this.#yielded, { claimed: claimed.map((c) => c.endpoint.id) })
    for (const c of claimed) this.#launch(c)
  }

  #launch(c: ClaimedDelivery): void {
    // A late claim answer may leave too little lease to finish before the rescuer may resend it.
    const lease = leaseLeftToSend({ leaseUntil: c.delivery.lease_until!, now: this.#o.clock.now(), jobTimeoutMs: this.#jobTimeoutMs, leaseMs: this.#leaseMs ?? this.#jobTimeoutMs })
    if (!lease.send) {
      this.#log.warn({ delivery_id: c.delivery.id, lease_left_ms: lease.leftMs }, 'executor:lease_too_short_to_send')
      return
    }
    // The slot stays taken until the endpoint has nothing more for it (the settle buffer is bounded
    // by it), while the dispatcher runs, its owner is not giving slots back (fair share) and the turn
    // has not had its share while other endpoints wait; one that gave way is claimed after the others, in turn.
    const owner = c.endpoint.owner_id
    const running = (deliveries: number) =>
      this.#running && (this.#slots.keepsTurn(owner, deliveries) || ((this.#yielded = yieldedAfter(this.#yielded, { gaveUp: c.endpoint.id })), false))
    const turn = { clock: this.#o.clock, jobTimeoutMs: this.#jobTimeoutMs, actor: this.#actor, settler: this.#settler, post: (claim: ClaimedDelivery) => this.#post(claim), running }
    this.#slots.take(owner, performance.now())
    const p: Promise<void> = endpointTurn(c, turn)
      .catch((err) => this.#log.error({ err, delivery_id: c.delivery.id }, 'executor:error'))
      .finally(() => {
        this.#slots.give(owner)
        this.#inflight.delete(p)
        if (this.#running) this.#wakeProducer()
      })
    this.#inflight.add(p)
  }

  get #jobTimeoutMs(): number {
    return this.#o.jobTimeoutMs ?? JOB_TIMEOUT_MS
  }

  /** How an attempt is made: the same for the running loop and `runOnce`. */
  get #executorDeps(): ExecutorDeps {
    return {
      clock: this.#o.clock,
      transport: this.#o.transport,
      secretBox: this.#secrets,
      actor: this.#actor,
      ...(this.#o.jobTimeoutMs !== undefined ? { jobTimeoutMs: this.#o.jobTimeoutMs } : {}),
      ...(this.#o.snoozeBudget !== undefined ? { snoozeBudget: this.#o.snoozeBudget } : {}),
    }
  }

  /** Starts one attempt, tracked until answered (shutdown waits for these, not for their settles). */
  #post(c: ClaimedDelivery): Promise<Settlement> {
    const posting = executeDelivery(c, this.#executorDeps)
    const posted = posting.then((s) => s.result && this.#observer.attempted(s.result), () => {}).finally(() => this.#posting.delete(posted))
    this.#posting.add(posted)
    return posting
  }

  /**
   * Fans out every waiting event; with `budgetMs`, for about that long (`more`: events are left;
   * the fan-out loop's passes, so it looks between them whether it is stopping).
   */
  fanoutOnce(budgetMs = Infinity, claims?: FanoutClaims): Promise<FanoutPassResult> {
    const o = this.#o
    return fanoutPass({ db: o.db, clock: o.clock, catalog: o.catalog, embedAdmits: o.embedAdmits, actor: this.#actor, observer: this.#observer, turns: this.#fanoutTurns, ...(claims ? { claims } : {}) }, budgetMs)
  }

  /**
   * One synchronous step for tests on a fake clock: fan out, claim into every free slot, attempt
   * each claimed delivery, and record the outcomes before returning. Under the same lease and
   * job timeout as the running loop, so a test sees what production does.
   */
  async runOnce(): Promise<StepReport> {
    const fan = await this.fanoutOnce()
    const { claimed, settled } = await deliveryClaim(this.#o.db, {
      now: this.#o.clock.now(),
      limit: this.#concurrency,
      actor: this.#actor,
      ...(this.#leaseMs !== undefined ? { leaseMs: this.#leaseMs } : {}),
    })
    const settlements = await Promise.all(claimed.map((c) => executeDelivery(c, this.#executorDeps)))
    await Promise.all(settlements.map((s) => this.#settler.add(s)))
    await this.#settler.flush()
    return {
      fannedOut: fan.events,
      enqueued: fan.enqueued,
      claimed: claimed.length,
      settledOnClaim: settled,
      attempted: settlements.length,
    }
  }

  /**
   * Rescues deliveries whose worker was lost, prunes events past retention, retires settled
   * deliveries past the delivery retention (bounded per pass: a backlog takes several),
   * purges deleted endpoints with nothing left to settle, and creates ledger partitions ahead.
   */
  maintenanceOnce(): Promise<MaintenanceReport> {
    return maintenancePass({
      db: this.#o.db,
      clock: this.#o.clock,
      log: this.#log,
      observer: this.#observer,
      leaseMs: this.#leaseMs,
      retentionMs: this.#o.retentionMs,
      deliveryRetentionDays: this.#o.deliveryRetentionDays,
    })
  }
}
