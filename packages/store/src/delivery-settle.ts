import { sql } from 'kysely'
import {
  DeliveryOutcome,
  JOB_TIMEOUT_MS,
  decideDelivery,
  decideEndpointAfterOutcome,
  type DeliveryRow,
  type EndpointRow,
  type LedgerEntry,
} from '@hookledger/core'
import type { Db, Trx } from './database.js'
import { foldOver, lockedWrite } from './ledger-commit.js'
import { deliveriesWriteIfClaimed } from './projection-write.js'

/** One finished claim: the running row as the worker holds it, and what happened. */
export interface Settlement {
  readonly delivery: DeliveryRow
  readonly outcome: DeliveryOutcome
  /** `worker:<id>` that made the attempt. */
  readonly actor: string
}

/**
 * Records outcomes of running deliveries in one transaction: one guarded write for all
 * delivery rows (a row the rescuer already took back is left alone and its outcome dropped),
 * the endpoint transitions each outcome implies (decided on the locked endpoint rows), then one
 * statement for the endpoint rows, the multi-row ledger append and the attempt-history rows.
 * Returns the ids recorded.
 */
export async function deliverySettle(trx: Trx, items: readonly Settlement[], now: Date): Promise<Set<string>> {
  if (items.length === 0) return new Set()
  const deliveryEntries = new Map<string, LedgerEntry[]>()
  for (const it of items) {
    deliveryEntries.set(it.delivery.id, decideDelivery(it.delivery, it.outcome, { now, actor: it.actor }))
  }
  const { set } = foldOver({ deliveries: items.map((i) => i.delivery) }, [...deliveryEntries.values()].flat())
  const written = await deliveriesWriteIfClaimed(
    trx,
    items.map((i) => set.deliveries.get(i.delivery.id)!),
    items.map((i) => ({ id: i.delivery.id, claimed_by: i.delivery.claimed_by!, lease_until: i.delivery.lease_until! })),
  )
  const kept = items.filter((i) => written.has(i.delivery.id))
  if (kept.length === 0) return written
  const endpointIds = [...new Set(kept.map((i) => i.delivery.endpoint_id))].sort()
  const endpoints = (
    await sql<EndpointRow>`select * from endpoints where id = any(${endpointIds}::uuid[]) order by id for update`.execute(trx)
  ).rows
  const before = new Map(endpoints.map((e) => [e.id, e]))
  const current = new Map(before)
  const entries: LedgerEntry[] = []
  for (const it of kept) {
    const own = deliveryEntries.get(it.delivery.id)!
    // The endpoint decision sees the row after this delivery released its lease.
    const released = foldOver({ endpoints: [current.get(it.delivery.endpoint_id)!] }, own).set.endpoints
    const endpoint = released.get(it.delivery.endpoint_id)!
    const transitions = decideEndpointAfterOutcome(endpoint, it.outcome, now, it.actor)
    const after = foldOver({ endpoints: [endpoint] }, transitions).set.endpoints.get(endpoint.id)!
    current.set(endpoint.id, after)
    entries.push(...own, ...transitions)
  }
  // Only endpoints the entries changed are written (a rescued delivery whose lease another one
  // has since taken leaves its endpoint as it is): every written row has its ledger entry.
  const changed = endpointIds.map((id) => current.get(id)!).filter((row) => row !== before.get(row.id))
  await lockedWrite(trx, { endpoints: changed }, entries)
  return written
}

/**
 * The rescuer: a delivery still `running` after its lease (the job timeout) belongs to a worker
 * that died or hung. Its lost attempt is recorded as interrupted and it is retried with the
 * usual backoff (or discarded if that was attempt 18). Returns how many were rescued.
 */
export async function deliveryRescue(db: Db, params: { now: Date; limit?: number }): Promise<number> {
  const { now } = params
  return db.transaction().execute(async (trx) => {
    const stale = await sql<DeliveryRow>`
      select * from deliveries where state = 'running' and lease_until <= ${now}
      order by lease_until limit ${params.limit ?? 100} for update skip locked
    `.execute(trx)
    if (stale.rows.length === 0) return 0
    const items: Settlement[] = stale.rows.map((d) => ({
      delivery: d,
      actor: 'system',
      outcome: DeliveryOutcome.interrupted({
        started_at: new Date(d.lease_until!.getTime() - JOB_TIMEOUT_MS),
        duration_ms: JOB_TIMEOUT_MS,
        status_code: null,
        error: `interrupted: ${d.claimed_by} held the lease past ${d.lease_until!.toISOString()}`,
        signed_with: [],
      }),
    }))
    return (await deliverySettle(trx, items, now)).size
  })
}
