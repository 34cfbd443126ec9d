/**
 * What leaves the projections, and the entries that say so. The hot tables follow recent
 * traffic: a settled delivery (completed or discarded) whose last change is older than the
 * retention leaves `deliveries` (`deliveries.retired`, one entry per batch), and a deleted
 * endpoint leaves `endpoints` once nothing of it can still move (`endpoint.purged`). Their
 * entries stay in the ledger, so replay, audit, receipts and the attempt history still read them.
 */
import type { LedgerEntryOf } from './ledger-entry.js'
import type { DeliveryRow, DeliveryState, EndpointRow } from './projections.js'

const DAY_MS = 24 * 3_600_000

/** Default delivery retention (`HOOKLEDGER_DELIVERY_RETENTION_DAYS`). */
export const DELIVERY_RETENTION_DEFAULT_DAYS = 30

/** Deliveries one retirement batch (one transaction, one entry) removes at most. */
export const RETIREMENT_BATCH = 1_000

/**
 * Batches one maintenance pass runs at most, so a backlog (the first pass after enabling
 * retention on months of history) is worked off over several passes instead of one long one.
 */
export const RETIREMENT_BATCHES_PER_PASS = 10

/** Deleted endpoints one maintenance pass purges at most. */
export const PURGE_BATCH = 100

/** The states from which a delivery can never move again by itself (a redelivery aside). */
export const SETTLED_STATES: readonly DeliveryState[] = ['completed', 'discarded']

/** Deliveries whose last change is before this instant are old enough to retire. */
export function retentionCutoff(now: Date, retentionDays: number): Date {
  if (!Number.isInteger(retentionDays) || retentionDays < 1) throw new RangeError(`retention must be a whole number of days ≥ 1, got ${retentionDays}`)
  return new Date(now.getTime() - retentionDays * DAY_MS)
}

/** Whether a delivery may leave the projection: settled, and last changed before the cutoff. */
export function isRetirable(row: Pick<DeliveryRow, 'state' | 'updated_at'>, cutoff: Date): boolean {
  return SETTLED_STATES.includes(row.state) && row.updated_at.getTime() < cutoff.getTime()
}

/**
 * The entry retiring the rows of `candidates` that may leave (see `isRetirable`; the store's
 * query picks them, this decides), or null when none may. Ids are sorted so the entry does not
 * depend on the order the database returned them in.
 */
export function decideRetirement(
  candidates: readonly Pick<DeliveryRow, 'id' | 'state' | 'updated_at'>[],
  ctx: { readonly now: Date; readonly cutoff: Date; readonly actor: string },
): LedgerEntryOf<'deliveries.retired'> | null {
  const ids = candidates.filter((d) => isRetirable(d, ctx.cutoff)).map((d) => d.id).sort()
  if (ids.length === 0) return null
  return {
    kind: 'deliveries.retired',
    occurred_at: ctx.now,
    owner_id: '*',
    endpoint_id: null,
    delivery_id: null,
    event_id: null,
    actor: ctx.actor,
    payload: { delivery_ids: ids, count: ids.length, cutoff: ctx.cutoff.toISOString() },
  }
}

/**
 * The entry purging an endpoint, or null while it must stay: it must be deleted, and none of
 * its deliveries may still move (pending, retryable or running: a running one settles and may
 * be retried, and a waiting one is discarded at its next claim, which needs the endpoint row).
 */
export function decidePurge(
  endpoint: Pick<EndpointRow, 'id' | 'owner_id' | 'deleted_at'>,
  unsettledDeliveries: number,
  ctx: { readonly now: Date; readonly actor: string },
): LedgerEntryOf<'endpoint.purged'> | null {
  if (endpoint.deleted_at === null || unsettledDeliveries > 0) return null
  return {
    kind: 'endpoint.purged',
    occurred_at: ctx.now,
    owner_id: endpoint.owner_id,
    endpoint_id: endpoint.id,
    delivery_id: null,
    event_id: null,
    actor: ctx.actor,
    payload: { deleted_at: endpoint.deleted_at.toISOString() },
  }
}
