import type { WitnessOutcome } from '@hookledger/worker'
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import type { AttemptResult, Clock, LedgerEntry } from '@hookledger/core'
import { ownersQueueStats, queueStats, type Db, type OwnersQueueStats, type QueueStats } from '@hookledger/store'
import type { DispatcherObserver } from '@hookledger/worker'
import { registerOwnerMetrics } from './owner-metrics.js'

/** Gauges that need a query are read at most this often, whatever the scrape rate. */
export const QUEUE_STATS_CACHE_MS = 5_000

/** Totals since start, for the summary log line. */
export interface ActivityTotals {
  delivered: number
  retried: number
  snoozed: number
  discarded: number
  settlesDropped: number
  rescued: number
}

export interface ServiceMetrics {
  readonly registry: Registry
  /** Given to the dispatcher (worker roles): counts outcomes off the entries each transaction wrote. */
  readonly observer: DispatcherObserver
  readonly totals: ActivityTotals
  /** Queue and ledger figures, cached for `QUEUE_STATS_CACHE_MS`. */
  queueStats(): Promise<QueueStats>
  /** Prometheus text exposition. */
  render(): Promise<{ contentType: string; body: string }>
  /** Counts what a witness did with a checkpoint (the log's alert: `rolled_back`). */
  witnessed(outcome: WitnessOutcome): void
  /** Counts one API answer by its route pattern (bounded: the declared routes) and status. */
  requested(route: string, status: number): void
  /** Counts events of internal types a committed fan-out decided (none delivered), by type. */
  internalDecided(counts: ReadonlyMap<string, number>): void
}

const statusClass = (r: AttemptResult) => (r.kind === 'response' ? `${Math.floor(r.status / 100)}xx` : r.kind)

/**
 * The process's Prometheus metrics (prom-client) and the counters behind the summary log:
 * delivery outcomes, attempt durations, batch sizes and times, dropped settles and egress
 * refusals — counted as the dispatcher works — and, computed on scrape with a short cache,
 * queue depth and age, endpoints by state, the ledger's and the sealer's positions.
 */
export function createServiceMetrics(options: { db: Db; clock: Clock }): ServiceMetrics {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  const totals: ActivityTotals = { delivered: 0, retried: 0, snoozed: 0, discarded: 0, settlesDropped: 0, rescued: 0 }

  const deliveries = new Counter({
    name: 'hookledger_deliveries_total',
    help: 'Delivery outcomes recorded by this process: completed, retry, snoozed (Retry-After), busy (endpoint lease taken), discarded (by reason), interrupted (rescued).',
    labelNames: ['outcome', 'reason'] as const,
    registers: [registry],
  })
  const attemptSeconds = new Histogram({
    name: 'hookledger_attempt_duration_seconds',
    help: 'Duration of one HTTP attempt, by status class (2xx…5xx) or failure (timeout, connection_error, egress_blocked, too_many_redirects).',
    labelNames: ['status_class'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15],
    registers: [registry],
  })
  const settlesDropped = new Counter({
    name: 'hookledger_settles_dropped_total',
    help: 'Attempt outcomes not applied because their claim was gone (each kept in the ledger as delivery.settle_dropped).',
    registers: [registry],
  })
  const egressBlocked = new Counter({
    name: 'hookledger_egress_blocked_total',
    help: 'Attempts refused by the egress guard, by the rule (address range) that refused them.',
    labelNames: ['rule'] as const,
    registers: [registry],
  })
  const batchBuckets = [1, 2, 4, 8, 16, 32, 64, 128, 256]
  const timeBuckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]
  const claimBatch = new Histogram({ name: 'hookledger_claim_batch_size', help: 'Due deliveries decided per claim transaction.', buckets: batchBuckets, registers: [registry] })
  const claimSeconds = new Histogram({ name: 'hookledger_claim_duration_seconds', help: 'Duration of one claim transaction.', buckets: timeBuckets, registers: [registry] })
  const settleBatch = new Histogram({ name: 'hookledger_settle_batch_size', help: 'Outcomes per settle transaction.', buckets: batchBuckets, registers: [registry] })
  const settleSeconds = new Histogram({ name: 'hookledger_settle_duration_seconds', help: 'Duration of one settle transaction.', buckets: timeBuckets, registers: [registry] })

  const count = (entries: readonly LedgerEntry[]) => {
    for (const e of entries) {
      switch (e.kind) {
        case 'delivery.attempted':
          // Ledger format 2: a 2xx attempt is its own completion (format 1 wrote delivery.completed).
          if (!e.payload.completes) break
          deliveries.inc({ outcome: 'completed', reason: '' })
          totals.delivered++
          break
        case 'delivery.completed':
          deliveries.inc({ outcome: 'completed', reason: '' })
          totals.delivered++
          break
        case 'delivery.retry_scheduled':
          deliveries.inc({ outcome: 'retry', reason: '' })
          totals.retried++
          break
        case 'delivery.snoozed':
          deliveries.inc({ outcome: 'snoozed', reason: '' })
          totals.snoozed++
          break
        case 'delivery.lease_busy':
          deliveries.inc({ outcome: 'busy', reason: '' })
          break
        case 'delivery.discarded':
          deliveries.inc({ outcome: 'discarded', reason: e.payload.reason })
          totals.discarded++
          break
        case 'delivery.settle_dropped':
          settlesDropped.inc()
          totals.settlesDropped++
          break
      }
    }
  }
  const observer: DispatcherObserver = {
    claimed(decided, entries, ms) {
      claimBatch.observe(decided)
      claimSeconds.observe(ms / 1000)
      count(entries)
    },
    settled(batch, entries, ms) {
      settleBatch.observe(batch)
      settleSeconds.observe(ms / 1000)
      count(entries)
    },
    attempted(result) {
      attemptSeconds.observe({ status_class: statusClass(result) }, result.durationMs / 1000)
      if (result.kind === 'egress_blocked') egressBlocked.inc({ rule: result.error })
    },
    fannedOut(events, enqueued) {
      eventsPublished.inc(events)
      deliveriesEnqueued.inc(enqueued)
    },
    rescued(n) {
      deliveries.inc({ outcome: 'interrupted', reason: '' }, n)
      totals.rescued += n
    },
  }

  let cached: { at: number; value: Promise<QueueStats> } | null = null
  const stats = (): Promise<QueueStats> => {
    const now = performance.now()
    if (!cached || now - cached.at > QUEUE_STATS_CACHE_MS) {
      const value = queueStats(options.db, options.clock.now())
      cached = { at: now, value }
      // A failed read (the database away) is not cached.
      value.catch(() => (cached = null))
    }
    return cached.value
  }
  const gauge = (name: string, help: string, read: (s: QueueStats, g: Gauge) => void, labelNames: string[] = []) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers: [registry],
      async collect() {
        // The database away: the gauges keep their last values; the counters still answer.
        const s = await stats().catch(() => null)
        if (s) read(s, this)
      },
    })
  gauge('hookledger_deliveries_due', 'Waiting deliveries whose time has come.', (s, g) => g.set(s.due))
  gauge('hookledger_endpoints_ready', 'Endpoints with due work and no live lease.', (s, g) => g.set(s.endpointsReady))
  gauge('hookledger_oldest_due_seconds', 'How long the longest-waiting ready endpoint has waited.', (s, g) => g.set(s.oldestDueSeconds))
  gauge(
    'hookledger_endpoints',
    'Endpoints (not deleted) by state.',
    (s, g) => {
      g.set({ state: 'enabled' }, s.endpoints.enabled)
      g.set({ state: 'failing' }, s.endpoints.failing)
      g.set({ state: 'disabled' }, s.endpoints.disabled)
    },
    ['state'],
  )
  // Per owner, bounded (top N plus "other"): owner-metrics.ts. Cached like the queue figures.
  let ownersCached: { at: number; value: Promise<OwnersQueueStats> } | null = null
  registerOwnerMetrics(registry, () => {
    const now = performance.now()
    if (!ownersCached || now - ownersCached.at > QUEUE_STATS_CACHE_MS) {
      const value = ownersQueueStats(options.db, options.clock.now())
      ownersCached = { at: now, value }
      value.catch(() => (ownersCached = null))
    }
    return ownersCached.value.catch(() => null)
  })
  gauge('hookledger_ledger_position', 'The highest ledger position.', (s, g) => g.set(s.ledgerPosition))
  gauge('hookledger_ledger_sealed_position', 'The last ledger position a signed checkpoint covers.', (s, g) => g.set(s.sealedPosition))
  gauge('hookledger_ledger_snapshot_position', 'Replay and ledger verify start from this position (the latest signed projection snapshot; 0: none).', (s, g) => g.set(s.snapshotPosition))
  gauge('hookledger_ledger_snapshot_age_seconds', 'Age of the latest signed projection snapshot (-1: none yet).', (s, g) => g.set(s.snapshotAgeSeconds ?? -1))

  const eventsPublished = new Counter({
    name: 'hookledger_events_published_total',
    help: 'Published events this process took in (fanned out to their endpoints), from the API and from applications publishing in their own transactions alike.',
    registers: [registry],
  })
  const deliveriesEnqueued = new Counter({
    name: 'hookledger_deliveries_enqueued_total',
    help: 'Deliveries the fan-out enqueued (one per event and matching endpoint).',
    registers: [registry],
  })
  const eventsInternal = new Counter({
    name: 'hookledger_events_internal_total',
    help: 'Published events of a type with exposure internal that this process fanned out: recorded and explainable, delivered to no endpoint. By type (bounded: the declared types).',
    labelNames: ['type'] as const,
    registers: [registry],
  })
  const httpRequests = new Counter({
    name: 'hookledger_http_requests_total',
    help: 'API answers, by route pattern (e.g. /api/admin/webhooks/:id; unmatched paths are "unmatched") and status code.',
    labelNames: ['route', 'status'] as const,
    registers: [registry],
  })
  const witnessSubmissions = new Counter({
    name: 'hookledger_witness_submissions_total',
    help: 'Checkpoints submitted to witnesses, by witness and outcome: cosigned, failed (refused or down), rolled_back (the witness holds a larger tree than the log: alert).',
    labelNames: ['witness', 'outcome'] as const,
    registers: [registry],
  })

  return {
    registry,
    observer,
    witnessed: (o) => witnessSubmissions.inc({ witness: o.witness, outcome: o.outcome }),
    requested: (route, status) => httpRequests.inc({ route, status: String(status) }),
    internalDecided: (counts) => {
      for (const [type, n] of counts) eventsInternal.inc({ type }, n)
    },
    totals,
    queueStats: stats,
    render: async () => ({ contentType: registry.contentType, body: await registry.metrics() }),
  }
}
