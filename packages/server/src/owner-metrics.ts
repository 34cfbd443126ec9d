import { Gauge, type Registry } from 'prom-client'
import type { OwnerQueueStats, OwnersQueueStats } from '@hookledger/store'

/**
 * How many owners get a label of their own in the per-owner gauges; the rest are summed as
 * `owner="other"`. A label per owner would make one series per tenant — thousands of owners
 * would swamp the scraper — so the series are bounded at N + 1 per gauge, whatever the owners.
 */
export const OWNER_METRICS_TOP_N = 10

/** The label the owners beyond the top N are summed under (an owner named `other` shares it: still counted, never lost). */
export const OTHER_OWNERS = 'other'

type Figures = Omit<OwnerQueueStats, 'owner_id'>
const FIGURES = ['endpoints', 'waiting', 'due', 'in_flight'] as const

/**
 * The owners the gauges name: the `n` with the most unfinished work (waiting + in flight, then
 * endpoints, then id, so the choice is stable between scrapes), and `other`, the sum of the rest
 * (present only when there is a rest). Pure: the unit spec drives it.
 */
export function ownersTopWithOther(owners: readonly OwnerQueueStats[], n: number): OwnerQueueStats[] {
  const ranked = [...owners].sort(
    (a, b) => b.waiting + b.in_flight - (a.waiting + a.in_flight) || b.endpoints - a.endpoints || (a.owner_id < b.owner_id ? -1 : a.owner_id > b.owner_id ? 1 : 0),
  )
  const top = ranked.slice(0, Math.max(0, n))
  const rest = ranked.slice(top.length)
  if (rest.length === 0) return top
  const other: Record<keyof Figures, number> = { endpoints: 0, waiting: 0, due: 0, in_flight: 0 }
  for (const o of rest) for (const f of FIGURES) other[f] += o[f]
  return [...top, { owner_id: OTHER_OWNERS, ...other }]
}

/**
 * The per-owner gauges, computed on scrape from `read` (cached by the caller). Each collect
 * starts from empty, so an owner that left the top N leaves the exposition instead of freezing
 * at its last value.
 */
export function registerOwnerMetrics(registry: Registry, read: () => Promise<OwnersQueueStats | null>, topN = OWNER_METRICS_TOP_N): void {
  const perOwner = (name: string, help: string, figure: keyof Figures) =>
    new Gauge({
      name,
      help: `${help} By owner: the ${topN} with the most unfinished work, the rest summed as owner="${OTHER_OWNERS}".`,
      labelNames: ['owner'] as const,
      registers: [registry],
      async collect() {
        const s = await read()
        // The database away: keep the last values, as the queue gauges do.
        if (!s) return
        this.reset()
        for (const o of ownersTopWithOther(s.owners, topN)) this.set({ owner: o.owner_id }, o[figure])
      },
    })
  perOwner('hookledger_owner_endpoints', 'Endpoints (not deleted).', 'endpoints')
  perOwner('hookledger_owner_deliveries_waiting', 'Waiting deliveries (pending or retryable), due or not.', 'waiting')
  perOwner('hookledger_owner_deliveries_due', 'Waiting deliveries whose time has come.', 'due')
  perOwner('hookledger_owner_deliveries_in_flight', 'Deliveries claimed and not settled: the worker slots the owner holds.', 'in_flight')
  new Gauge({
    name: 'hookledger_owners_suspended',
    help: 'Owners suspended now (owners.suspend): their publishes are refused, their deliveries wait.',
    registers: [registry],
    async collect() {
      const s = await read()
      if (s) this.set(s.suspended)
    },
  })
}
