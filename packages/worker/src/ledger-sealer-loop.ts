import type { Clock, LedgerSigningKey, Logger } from '@hookledger/core'
import { ledgerSeal, type Db } from '@hookledger/store'
import type { DatabaseHealth } from './database-health.js'

type SealerOptions = { db: Db; key: LedgerSigningKey; clock: Clock; intervalMs: number; logger?: Logger | undefined; health?: DatabaseHealth | undefined }

/**
 * Seals the ledger every `intervalMs` behind the writers (see `ledgerSeal`): the hash chain is
 * extended and a signed checkpoint appended whenever rows are new. Many processes may run one;
 * an advisory lock lets one seal at a time. A failed run is retried next interval.
 */
export class LedgerSealerLoop {
  readonly #o: SealerOptions
  #timer: NodeJS.Timeout | null = null
  #running: Promise<void> | null = null
  #stopped = false

  constructor(options: SealerOptions) {
    this.#o = options
  }

  start(): void {
    this.#stopped = false
    this.#schedule()
  }

  /** One seal now (what the timer runs); resolves when done. */
  async sealOnce(): Promise<number> {
    const { checkpoints, rows } = await ledgerSeal(this.#o.db, { key: this.#o.key, now: this.#o.clock.now() })
    if (checkpoints.length > 0) this.#o.logger?.debug({ rows, seq: checkpoints[checkpoints.length - 1]!.seq }, 'ledger:sealed')
    return rows
  }

  /** Stops the timer and seals once more, so a clean exit leaves nothing unsealed it wrote. */
  async stop(): Promise<void> {
    this.#stopped = true
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
    await this.#running
    await this.sealOnce().catch((err: unknown) => this.#failed(err))
  }

  /** Through an outage the next interval is the retry, and the outage is logged once (health). */
  #failed(err: unknown): void {
    if (this.#o.health?.failed(err, 'sealer') === 'unavailable') return
    this.#o.logger?.warn({ err }, 'ledger:seal_failed')
  }

  #schedule(): void {
    if (this.#stopped) return
    this.#timer = setTimeout(() => {
      this.#running = this.sealOnce()
        .then(() => undefined)
        .catch((err: unknown) => this.#failed(err))
        .finally(() => {
          this.#running = null
          this.#schedule()
        })
    }, this.#o.intervalMs)
    this.#timer.unref()
  }
}
