/**
 * Taking back deliveries whose worker was lost: the rescuer's pass, and the claim that takes over
 * a lapsed lease. Both record the lost attempt as interrupted (deliverySettle).
 */
import { sql } from 'kysely'
import { DeliveryOutcome, JOB_TIMEOUT_MS, LEASED_HEAD_GRID_MS, type DeliveryRow, type EndpointRow } from '@hookledger/core'
import type { Db, Trx } from '../database/database.js'
import { limitTransactionIdle } from '../database/transaction-idle-limit.js'
import { ENDPOINT_COLUMNS } from '../projection-write.js'
import { DELIVERY_ROW_COLUMNS } from './delivery-row-sql.js'
import { deliverySettle, type Settlement } from './delivery-settle.js'

/**
 * The rescuer: a delivery still `running` after its lease (the job timeout) belongs to a worker
 * that died or hung. Its lost attempt is recorded as interrupted and it is retried with the
 * usual backoff (or discarded if that was attempt 18). Returns how many were rescued.
 *
 * A running delivery holds its endpoint's lease (a claim that takes over a lapsed lease rescues
 * the delivery that held it, delivery-claim.ts), and an endpoint's queue head sits at its
 * lease's end rounded up to the 2 s grid (migration 0021), so the lost deliveries are found
 * through the heads due within the grid's step: the queue's index, not a scan of the states.
 * (An endpoint whose rate limit holds its next send past the lease's end has its head there,
 * and its lost delivery is taken back then: no later than the endpoint could send again.)
 */
export async function deliveryRescue(db: Db, params: { now: Date; limit?: number; leaseMs?: number }): Promise<number> {
  const { now } = params
  return db.transaction().execute(async (trx) => {
    await limitTransactionIdle(trx)
    const stale = await sql<DeliveryRow>`
      select ${DELIVERY_ROW_COLUMNS} from endpoint_queue q
      join endpoints e on e.id = q.endpoint_id
      cross join lateral (
        select * from delivery_states s where s.id = e.busy_delivery_id and s.state = 'running' and s.lease_until <= ${now} limit 1
      ) s
      join delivery_origins o on o.id = s.id
      where q.ready_at <= ${new Date(now.getTime() + LEASED_HEAD_GRID_MS)} and e.busy_until <= ${now}
      order by s.lease_until limit ${params.limit ?? 100} for update of s skip locked
    `.execute(trx)
    return settleLost(trx, stale.rows, now, params.leaseMs)
  })
}

/** Settles running deliveries whose lease ran out (locked by the caller) as interrupted attempts. */
export async function settleLost(trx: Trx, lost: readonly DeliveryRow[], now: Date, leaseMs = JOB_TIMEOUT_MS): Promise<number> {
  if (lost.length === 0) return 0
  const items: Settlement[] = lost.map((d) => ({
    delivery: d,
    actor: 'system',
    outcome: DeliveryOutcome.interrupted({
      // The lease began when the attempt did; it ran at least until the rescuer saw it.
      started_at: new Date(d.lease_until!.getTime() - leaseMs),
      duration_ms: Math.max(0, now.getTime() - (d.lease_until!.getTime() - leaseMs)),
      status_code: null,
      error: `interrupted: ${d.claimed_by} held the lease past ${d.lease_until!.toISOString()}`,
      signed_with: [],
    }),
  }))
  return (await deliverySettle(trx, items, now)).size
}

/**
 * A claim about to take over endpoints whose lease lapsed while a delivery of theirs held it
 * (`endpoints`, locked by the claim): those deliveries are settled as lost first, in the claim's
 * transaction, so every running delivery stays named by its endpoint's lease — where the rescuer
 * looks. One another transaction holds (its worker's late settle) is left to it. Returns the
 * endpoints as they are after the rescue.
 */
export async function rescueLapsedLeases(trx: Trx, endpoints: readonly EndpointRow[], now: Date, leaseMs = JOB_TIMEOUT_MS): Promise<EndpointRow[]> {
  const holders = endpoints.map((e) => e.busy_delivery_id!)
  const lost = await sql<DeliveryRow>`
    select ${DELIVERY_ROW_COLUMNS} from delivery_states s join delivery_origins o on o.id = s.id
    where s.id = any(${holders}::uuid[]) and s.state = 'running' and s.lease_until <= ${now}
    order by s.id for update of s skip locked
  `.execute(trx)
  if ((await settleLost(trx, lost.rows, now, leaseMs)) === 0) return [...endpoints]
  const ids = endpoints.map((e) => e.id)
  return (await sql<EndpointRow>`select ${sql.raw(ENDPOINT_COLUMNS.join(', '))} from endpoints where id = any(${ids}::uuid[])`.execute(trx)).rows
}
