import { DELIVERY_RETENTION_DEFAULT_DAYS, type Clock, type Logger } from '@hookledger/core'
import {
  EVENT_RETENTION_DEFAULT_MS,
  deliveryRescue,
  deliveryRetire,
  endpointPurge,
  eventPrune,
  hotTablesVacuum,
  statisticsRefresh,
  type Db,
} from '@hookledger/store'
import { ledgerPartitionsAhead } from '@hookledger/ledger'
import type { DispatcherObserver } from './dispatcher-observer.js'

export interface MaintenanceReport {
  /** Lost attempts recorded and retried. */
  rescued: number
  /** Events past the event retention, deleted. */
  pruned: number
  /** Settled deliveries past the delivery retention, removed from `deliveries`. */
  retired: number
  /** Deleted endpoints with nothing left to settle, removed from `endpoints`. */
  purged: number
}

/**
 * One maintenance pass, at the injected clock's now: rescue deliveries whose worker was lost,
 * prune events past retention, retire settled deliveries past the delivery retention, purge
 * deleted endpoints with nothing left to settle, and keep ledger partitions ready ahead. Every
 * step is safe to run from several processes at once.
 */
export async function maintenancePass(o: {
  db: Db
  clock: Clock
  log: Logger
  observer: DispatcherObserver
  leaseMs: number | undefined
  retentionMs: number | undefined
  deliveryRetentionDays: number | undefined
}): Promise<MaintenanceReport> {
  const now = o.clock.now()
  const rescued = await deliveryRescue(o.db, { now, ...(o.leaseMs !== undefined ? { leaseMs: o.leaseMs } : {}) })
  const pruned = await eventPrune(o.db, { now, retentionMs: o.retentionMs ?? EVENT_RETENTION_DEFAULT_MS })
  const { retired } = await deliveryRetire(o.db, { now, retentionDays: o.deliveryRetentionDays ?? DELIVERY_RETENTION_DEFAULT_DAYS, actor: 'system' })
  const purged = await endpointPurge(o.db, { now, actor: 'system' })
  // Keeps ledger partitions ready ahead of the writers (a no-op but for one in a million rows).
  const partitionsCreated = await ledgerPartitionsAhead(o.db)
  // Statistics a burst of claims and settles left behind (the fan-out looks after its own).
  const analyzed = await statisticsRefresh(o.db)
  // The few rows every claim and settle rewrites, between autovacuum's visits (one statistics
  // read a pass; on a server without MAINTAIN, PostgreSQL before 17, autovacuum alone does it).
  const hot = await hotTablesVacuum(o.db)
  if (rescued > 0) {
    o.log.warn({ rescued }, 'rescuer:rescued')
    o.observer.rescued(rescued)
  }
  if (retired > 0 || purged > 0) o.log.info({ retired, purged }, 'retention:removed')
  if (partitionsCreated > 0) o.log.info({ created: partitionsCreated }, 'ledger:partitions_created')
  if (analyzed.length > 0) o.log.info({ tables: analyzed }, 'database:statistics_refreshed')
  if (hot.vacuumed.length > 0) o.log.debug({ tables: hot.vacuumed }, 'database:hot_tables_vacuumed')
  return { rescued, pruned, retired, purged }
}

/**
 * Runs `pass` every `everyMs`, each time after the previous pass ended (passes never overlap),
 * until stopped; a failed pass goes to `onError` and the next tick is its retry.
 */
export function scheduleMaintenance(everyMs: number, pass: () => Promise<unknown>, onError: (err: unknown) => void): { stop(): void } {
  let timer: NodeJS.Timeout | null = null
  let stopped = false
  const tick = () => {
    timer = setTimeout(async () => {
      await pass().catch(onError)
      if (!stopped) tick()
    }, everyMs)
  }
  tick()
  return {
    stop() {
      stopped = true
      if (timer) clearTimeout(timer)
    },
  }
}
