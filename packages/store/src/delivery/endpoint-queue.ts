/**
 * The claim's queue head (the baseline migration): per endpoint, `ready_at` — when it can next be
 * claimed (its earliest waiting delivery, after its lease). The write primitive refreshes the
 * rows of the endpoints each write touches, in the same transaction, from the one definition
 * in the database (the `endpoint_queue_expected` view), so the claim reads only endpoints with
 * due work and `ledger replay --verify` can check every row against that definition.
 */
import { sql } from 'kysely'
import type { DeliveryRow, EndpointRow } from '@hookledger/core'
import type { Db, Trx } from '../database/database.js'

/**
 * Which endpoints' queue heads a write may have moved: those of every delivery it created or
 * changed, and every endpoint whose lease, enabled flag or deletion it changed.
 */
export function endpointsWithMovedHeads(
  endpoints: { created: readonly EndpointRow[]; changed: readonly EndpointRow[] },
  before: ReadonlyMap<string, EndpointRow>,
  deliveries: { created: readonly DeliveryRow[]; changed: readonly DeliveryRow[] },
): string[] {
  const ids = new Set<string>()
  for (const d of deliveries.created) ids.add(d.endpoint_id)
  for (const d of deliveries.changed) ids.add(d.endpoint_id)
  for (const e of endpoints.created) ids.add(e.id)
  for (const e of endpoints.changed) {
    const b = before.get(e.id)
    if (!b || b.busy_until?.getTime() !== e.busy_until?.getTime() || b.enabled !== e.enabled || b.deleted_at?.getTime() !== e.deleted_at?.getTime()) ids.add(e.id)
  }
  return [...ids].sort()
}

/**
 * How a write's refreshed head meets the stored one. `assign`: the write holds its endpoints
 * `for update` (claim, settle, endpoint commands), so no other write of theirs is in flight and
 * its statement sees every committed one: the head is what the definition gives. `earliest`:
 * fan-out's write takes them only `for share` (fan-outs run side by side), so each sees its own new
 * deliveries but not another's in flight; a new delivery can only make the endpoint ready
 * sooner, so the earlier head wins.
 */
export type QueueMerge = 'assign' | 'earliest'

/** Queue heads that differ from their definition (none on a healthy database): for replay. */
export async function endpointQueueDrift(
  trx: Trx,
  limit: number,
): Promise<{ total: number; rows: { endpoint_id: string; live: Date | null; expected: Date | null; live_row: boolean }[] }> {
  const { rows } = await sql<{ endpoint_id: string; live: Date | null; expected: Date | null; live_row: boolean; total: string }>`
    select coalesce(x.endpoint_id, q.endpoint_id) as endpoint_id, q.ready_at as live, x.ready_at as expected,
           q.endpoint_id is not null as live_row, count(*) over () as total
    from endpoint_queue_expected x
    full join endpoint_queue q on q.endpoint_id = x.endpoint_id
    where x.ready_at is distinct from q.ready_at or (x.endpoint_id is null)
    order by 1
    limit ${limit}
  `.execute(trx)
  return { total: Number(rows[0]?.total ?? 0), rows: rows.map(({ total: _t, ...r }) => r) }
}

/**
 * Recomputes every queue head from its definition: for rows written outside the write primitive
 * (a bench's synthetic history). One statement; its cost follows the number of endpoints.
 */
export async function endpointQueueRebuildAll(trx: Trx): Promise<void> {
  await sql`
    insert into endpoint_queue (endpoint_id, owner_id, ready_at)
    select endpoint_id, owner_id, ready_at from endpoint_queue_expected
    on conflict (endpoint_id) do update set ready_at = excluded.ready_at
    where endpoint_queue.ready_at is distinct from excluded.ready_at
  `.execute(trx)
}

/**
 * When the next endpoint becomes ready after `now` (null: none is waiting for a time): how long
 * an idle producer may sleep before a rate limit's bucket, a backoff or a lease lets work go.
 * One probe of the queue-head index.
 */
export async function nextReadyAfter(db: Db, now: Date): Promise<Date | null> {
  const { rows } = await sql<{ at: Date | null }>`select min(ready_at) as at from endpoint_queue where ready_at > ${now}`.execute(db)
  return rows[0]?.at ?? null
}
