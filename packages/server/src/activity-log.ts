import type { LedgerEntry, Logger } from '@hookledger/core'
import type { DispatcherObserver } from '@hookledger/worker'
import type { ServiceMetrics } from './service-metrics.js'

/** How often `serve` logs what it did. */
export const ACTIVITY_SUMMARY_EVERY_MS = 60_000

const ENDPOINT_TRANSITIONS = new Set(['endpoint.failing', 'endpoint.recovered', 'endpoint.disabled'])

/**
 * The observer that also logs each endpoint state change the dispatcher records (failing,
 * recovered, disabled: `endpoint:failing` … at info, with the endpoint and owner) — an operator
 * reading the log sees a receiver go bad without waiting for an owner to complain.
 */
export function loggingObserver(inner: DispatcherObserver, log: Logger): DispatcherObserver {
  const logTransitions = (entries: readonly LedgerEntry[]) => {
    for (const e of entries) {
      if (ENDPOINT_TRANSITIONS.has(e.kind)) log.info({ endpoint_id: e.endpoint_id, owner_id: e.owner_id, ...e.payload }, e.kind.replace('.', ':'))
    }
  }
  return {
    claimed: (n, entries, ms) => (inner.claimed(n, entries, ms), logTransitions(entries)),
    settled: (n, entries, ms) => (inner.settled(n, entries, ms), logTransitions(entries)),
    attempted: (r) => inner.attempted(r),
    rescued: (n) => inner.rescued(n),
    fannedOut: (events, enqueued) => inner.fannedOut?.(events, enqueued),
  }
}

/**
 * One line a minute at info (`summary`): what this process delivered, retried, snoozed and
 * discarded since the last line, and the queue's depth and age — or only the counts when the
 * database cannot be read.
 */
export function startActivitySummary(options: { log: Logger; metrics: ServiceMetrics; everyMs?: number }): { stop(): void } {
  const { log, metrics } = options
  let last = { ...metrics.totals }
  const timer = setInterval(async () => {
    const now = { ...metrics.totals }
    const delta = Object.fromEntries(Object.entries(now).map(([k, v]) => [k, v - last[k as keyof typeof last]]))
    last = now
    const stats = await metrics.queueStats().catch(() => null)
    log.info(
      { ...delta, ...(stats ? { due: stats.due, oldest_due_s: Math.round(stats.oldestDueSeconds), endpoints_failing: stats.endpoints.failing } : { database: 'unreachable' }) },
      'summary',
    )
  }, options.everyMs ?? ACTIVITY_SUMMARY_EVERY_MS)
  timer.unref()
  return { stop: () => clearInterval(timer) }
}
