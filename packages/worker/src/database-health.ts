import { classifyDatabaseError, silentLogger, type DatabaseErrorClass, type Logger } from '@hookledger/core'

/**
 * Whether this process can reach its database, as its loops find out: each unit of work reports
 * a failure or a success here. An outage is logged once when it begins (`database:degraded`, with
 * the loop that saw it first and the error) and once when it ends (`database:recovered`, with
 * how long it lasted) — not once per failed query of every loop every few hundred ms.
 */
export class DatabaseHealth {
  readonly #log: Logger
  #degradedSince: number | null = null
  /** Outages seen since start. */
  outages = 0

  constructor(logger: Logger = silentLogger) {
    this.#log = logger
  }

  get degraded(): boolean {
    return this.#degradedSince !== null
  }

  /** Records a failed unit of work; returns the error's class. Unavailable starts an outage. */
  failed(err: unknown, where: string): DatabaseErrorClass {
    const cls = classifyDatabaseError(err)
    if (cls === 'unavailable' && this.#degradedSince === null) {
      this.#degradedSince = performance.now()
      this.outages++
      this.#log.warn({ where, err: (err as Error)?.message ?? String(err) }, 'database:degraded')
    }
    return cls
  }

  /** Records a unit of work that reached the database; ends an outage. */
  succeeded(): void {
    if (this.#degradedSince === null) return
    const outageMs = Math.round(performance.now() - this.#degradedSince)
    this.#degradedSince = null
    this.#log.info({ outage_ms: outageMs }, 'database:recovered')
  }
}
