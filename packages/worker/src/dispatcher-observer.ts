import type { AttemptResult, LedgerEntry } from '@hookledger/core'

/**
 * What the dispatcher reports as it works, for instruments (metrics, the summary log). Outcomes
 * are read off the ledger entries each transaction wrote — the same facts the ledger keeps — so
 * a counter cannot disagree with the audit trail. Every method is called on the hot path:
 * implementations only count.
 */
export interface DispatcherObserver {
  /** A claim transaction: how many due deliveries it decided (claimed or settled), its entries, how long. */
  claimed(decided: number, entries: readonly LedgerEntry[], ms: number): void
  /** A settle transaction: how many outcomes it applied or dropped, its entries, how long. */
  settled(batch: number, entries: readonly LedgerEntry[], ms: number): void
  /** One attempt's answer (or why there was none). */
  attempted(result: AttemptResult): void
  /** Deliveries the rescuer took back from a lost worker. */
  rescued(count: number): void
  /** A fan-out batch: the published events it took in and the deliveries it enqueued. */
  fannedOut?(events: number, enqueued: number): void
}

export const silentObserver: DispatcherObserver = Object.freeze({
  claimed() {},
  settled() {},
  attempted() {},
  rescued() {},
})
