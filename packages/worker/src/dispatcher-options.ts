import type { Clock, EventCatalog, HttpTransport, Logger, SecretBox, SnoozeBudget } from '@hookledger/core'
import type { Db, EmbedAdmits, Notifier } from '@hookledger/store'
import type { DatabaseHealth } from './database-health.js'
import type { DispatcherObserver } from './dispatcher-observer.js'

/** What a Dispatcher is built from. */
export interface DispatcherOptions {
  readonly db: Db
  readonly clock: Clock
  readonly transport: HttpTransport
  readonly secretBox: SecretBox
  readonly catalog: EventCatalog
  readonly embedAdmits: EmbedAdmits
  readonly workerId: string
  readonly logger?: Logger
  readonly notifier?: Notifier
  /** The database schema of this install: its NOTIFY channels are named after it (eventsChannel in core). */
  readonly schema?: string
  readonly concurrency?: number
  /** Deliveries an endpoint's turn keeps its slot for while others wait (core TURN_DELIVERIES_WHILE_OTHERS_WAIT). */
  readonly turnShare?: number
  readonly pollIntervalMs?: number
  readonly maintenanceIntervalMs?: number
  readonly retentionMs?: number
  /** Settled deliveries whose last change is older than this leave the `deliveries` table (default 30). */
  readonly deliveryRetentionDays?: number
  readonly shutdownGraceMs?: number
  /** Bounds one attempt: its request is aborted after it (default 15 s). */
  readonly jobTimeoutMs?: number
  /**
   * How long a claim holds the delivery and its endpoint; after it the rescuer takes it back.
   * Longer than the job timeout (see core `deriveAttemptTimeouts`); defaults to it.
   */
  readonly leaseMs?: number
  /** How long Retry-After may postpone a run before it spends attempts (core's default). */
  readonly snoozeBudget?: SnoozeBudget
  /** Shared with the process's other loops, so an outage is logged once. */
  readonly health?: DatabaseHealth
  /** Instruments (metrics, the summary log). */
  readonly observer?: DispatcherObserver
}

/** Counts of one `runOnce` step. */
export interface StepReport {
  fannedOut: number
  enqueued: number
  claimed: number
  settledOnClaim: number
  attempted: number
}
