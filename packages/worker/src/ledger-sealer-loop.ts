import type { Clock, Logger } from '@hookledger/core'
import {
  type LedgerKeyHandOver,
  type LedgerSigningKey,
  ledgerSeal,
  ledgerSnapshotLatestAt,
  ledgerSnapshotTake,
  SnapshotError,
} from '@hookledger/ledger'
import { type Db } from '@hookledger/store'
import type { DatabaseHealth } from './database-health.js'
import type { WitnessSubmitter } from './witness-submitter.js'
import type { SealFunction } from './sealer-thread/sealer-thread.js'

type SealerOptions = {
  db: Db
  key: LedgerSigningKey
  /** The key hand-overs (rotate-key) a snapshot's chain check follows. */
  handOvers?: readonly LedgerKeyHandOver[]
  clock: Clock
  intervalMs: number
  /** How old the latest projection snapshot may grow before this loop takes the next (0: never). */
  snapshotEveryMs?: number
  logger?: Logger | undefined
  health?: DatabaseHealth | undefined
  /** The policy's witnesses: each new checkpoint goes to them; one holding a larger tree stops the sealing. */
  witnesses?: WitnessSubmitter | undefined
  /** Where the seals run (a sealer thread's); by default ledgerSeal on `db`, on this thread. */
  seal?: SealFunction | undefined
}

/** How often the loop asks whether a snapshot is due (a query on a tiny table). */
const SNAPSHOT_CHECK_EVERY_MS = 60_000

/**
 * Seals the ledger every `intervalMs` behind the writers (see `ledgerSeal`): the hash chain is
 * extended and a signed checkpoint appended whenever rows are new. Many processes may run one;
 * an advisory lock lets one seal at a time. A failed run is retried next interval.
 *
 * It also keeps the projection snapshot recent (`snapshotEveryMs`), so replay and `ledger
 * verify` start from at most that far back: when the latest is older, it takes one beside the
 * sealing (a snapshot folds only the entries since the previous one; one process at a time).
 */
export class LedgerSealerLoop {
  readonly #o: SealerOptions
  #timer: NodeJS.Timeout | null = null
  #running: Promise<void> | null = null
  #stopped = false
  #snapshotting: Promise<void> | null = null
  #snapshotCheckedAt = Number.NEGATIVE_INFINITY
  #witnessed = false
  #submitting: Promise<void> | null = null
  #submitAgain = false

  readonly #seal: SealFunction

  constructor(options: SealerOptions) {
    this.#o = options
    this.#seal = options.seal ?? ((params) => ledgerSeal(options.db, { key: options.key, ...params }))
  }

  start(): void {
    this.#stopped = false
    // The first look a minute in: a starting process has other work.
    this.#snapshotCheckedAt = this.#o.clock.now().getTime()
    this.#schedule()
  }

  /**
   * One seal now (what the timer runs); resolves when done. With witnesses: the newest checkpoint
   * goes to them first (so a log rolled back behind a witness is caught before it signs again),
   * then after every seal that made one, beside the sealing (a slow witness never holds it up).
   */
  async sealOnce(): Promise<number> {
    const witnesses = this.#o.witnesses
    if (witnesses && !this.#witnessed) {
      this.#witnessed = true
      await witnesses.submit()
    }
    if (witnesses?.rolledBack) {
      this.#o.logger?.error({ reason: witnesses.rolledBack }, 'ledger:sealing_stopped')
      return 0
    }
    // Each checkpoint of a catch-up goes to the witnesses as it is made (a submission already
    // running picks up the newest when it ends), not after the last one.
    const { checkpoints, rows } = await this.#seal({
      now: this.#o.clock.now(),
      ...(witnesses ? { onCheckpoint: () => this.#submitBeside(witnesses) } : {}),
    })
    if (checkpoints.length > 0) this.#o.logger?.debug({ rows, seq: checkpoints[checkpoints.length - 1]!.seq }, 'ledger:sealed')
    this.#snapshotIfDue()
    return rows
  }

  /** At most one submission in flight; a seal while one runs is picked up by the next. */
  #submitBeside(witnesses: WitnessSubmitter): void {
    if (this.#submitting) {
      this.#submitAgain = true
      return
    }
    this.#submitting = witnesses
      .submit()
      .then(() => undefined)
      .catch((err: unknown) => this.#o.logger?.warn({ err }, 'witness:submit_failed'))
      .finally(() => {
        this.#submitting = null
        if (this.#submitAgain && !this.#stopped) {
          this.#submitAgain = false
          this.#submitBeside(witnesses)
        }
      })
  }

  /** Resolves when the witnesses have been sent the newest checkpoint (tests, shutdown). */
  async witnessed(): Promise<void> {
    while (this.#submitting) await this.#submitting
  }

  /** Starts a snapshot beside the sealing when the latest is older than `snapshotEveryMs`. */
  #snapshotIfDue(): void {
    const every = this.#o.snapshotEveryMs ?? 0
    if (every <= 0 || this.#stopped || this.#snapshotting !== null) return
    const now = this.#o.clock.now()
    if (now.getTime() - this.#snapshotCheckedAt < SNAPSHOT_CHECK_EVERY_MS) return
    this.#snapshotCheckedAt = now.getTime()
    this.#snapshotting = this.snapshotIfDue(every)
      .then(() => undefined)
      .catch((err: unknown) => {
        if (err instanceof SnapshotError && err.code === 'snapshot_busy') return
        if (this.#o.health?.failed(err, 'snapshot') === 'unavailable') return
        this.#o.logger?.error({ err, code: (err as SnapshotError).code }, 'ledger:snapshot_failed')
      })
      .finally(() => {
        this.#snapshotting = null
      })
  }

  /** Takes a snapshot if the latest is older than `everyMs`; resolves to whether it took one. */
  async snapshotIfDue(everyMs: number): Promise<boolean> {
    const latest = await ledgerSnapshotLatestAt(this.#o.db)
    if (latest !== null && this.#o.clock.now().getTime() - latest.getTime() < everyMs) return false
    const taken = await ledgerSnapshotTake(this.#o.db, { key: this.#o.key, now: () => this.#o.clock.now(), ...(this.#o.handOvers ? { handOvers: this.#o.handOvers } : {}) })
    if (taken.fresh) {
      const s = taken.snapshot
      this.#o.logger?.info({ seq: s.seq, before_position: s.before_position, endpoints: s.endpoints, deliveries: s.deliveries, checkpoint: taken.checkpoint, ms: taken.ms }, 'ledger:snapshot')
    }
    return taken.fresh
  }

  /** Stops the timer and seals once more, so a clean exit leaves nothing unsealed it wrote. */
  async stop(): Promise<void> {
    this.#stopped = true
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
    await this.#running
    await this.#snapshotting
    await this.sealOnce().catch((err: unknown) => this.#failed(err))
    await this.#submitting
  }

  /** Through an outage the next interval is the retry, and the outage is logged once (health). */
  #failed(err: unknown): void {
    if (this.#o.health?.failed(err, 'sealer') === 'unavailable') return
    this.#o.logger?.warn({ err }, 'ledger:seal_failed')
  }

  /** Every `intervalMs` from the start of the previous seal (not its end), so a slow seal does not stretch the cadence. */
  #schedule(delayMs = this.#o.intervalMs): void {
    if (this.#stopped) return
    this.#timer = setTimeout(() => {
      const started = Date.now()
      let failed = false
      this.#running = this.sealOnce()
        .then(() => undefined)
        .catch((err: unknown) => {
          failed = true
          this.#failed(err)
        })
        .finally(() => {
          this.#running = null
          // After a failure the whole interval is the retry's wait (an outage is not hammered).
          this.#schedule(failed ? this.#o.intervalMs : Math.max(0, this.#o.intervalMs - (Date.now() - started)))
        })
    }, delayMs)
    this.#timer.unref()
  }
}
