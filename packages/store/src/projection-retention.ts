/**
 * Retention of the projections (core/src/model/projection-retention.ts decides): settled deliveries
 * past the delivery retention, and deleted endpoints with nothing left to settle, leave their
 * tables through the write primitive, with the entries that say so. Run by the dispatcher's
 * maintenance; several workers may run it at once (rows another holds are skipped).
 */
import { sql } from 'kysely'
import {
  PURGE_BATCH,
  RETIREMENT_BATCH,
  RETIREMENT_BATCHES_PER_PASS,
  decidePurge,
  decideRetirement,
  retentionCutoff,
  type DeliveryRow,
  type EndpointRow,
  type LedgerEntry,
} from '@hookledger/core'
import type { Db } from './database/database.js'
import { ledgerWrite } from './ledger-write.js'
import { DELIVERY_ROW_COLUMNS } from './delivery/delivery-row-sql.js'

export interface DeliveryRetireParams {
  readonly now: Date
  readonly retentionDays: number
  readonly actor: string
  /** Rows per batch (one transaction, one `deliveries.retired` entry). */
  readonly batchSize?: number
  /** Batches this call runs at most. */
  readonly maxBatches?: number
}

/**
 * Retires settled deliveries whose last change is older than the retention, a batch per
 * transaction, until a batch comes back short or `maxBatches` ran. A batch takes the owners
 * with a delivery made before the cutoff in turn, each one's oldest made first, until it is
 * full: a delivery's last change never precedes its creation, so the origins' owner log finds
 * them, and the state rows need no index of their own for it (migration 0021). A delivery made
 * before the cutoff but changed since (a redelivery, a run still retrying) is read past until
 * it too is old. Returns how many rows left and in how many batches.
 */
export async function deliveryRetire(db: Db, params: DeliveryRetireParams): Promise<{ retired: number; batches: number }> {
  const cutoff = retentionCutoff(params.now, params.retentionDays)
  const batchSize = params.batchSize ?? RETIREMENT_BATCH
  const maxBatches = params.maxBatches ?? RETIREMENT_BATCHES_PER_PASS
  const owners = await ownersWithDeliveriesBefore(db, cutoff)
  let retired = 0
  let batches = 0
  while (owners.length > 0 && batches < maxBatches) {
    const n = await db.transaction().execute(async (trx) => {
      // Settled rows never move again by themselves; a redelivery (which takes discarded rows)
      // may hold one: it is skipped here and stays, since it is pending afterwards. The outer
      // limit stops the walk at the first owners that fill the batch.
      const rows = (
        await sql<DeliveryRow>`
          select x.* from unnest(${owners}::text[]) with ordinality w(owner_id, n)
          cross join lateral (
            select ${DELIVERY_ROW_COLUMNS} from delivery_origins o
            cross join lateral (
              select * from delivery_states s
              where s.id = o.id and s.next_attempt_at is null and s.updated_at < ${cutoff}
              limit 1
            ) s
            where o.owner_id = w.owner_id and o.created_at < ${cutoff}
            order by o.created_at, o.id limit ${batchSize}
            for update of s skip locked
          ) x
          limit ${batchSize}
        `.execute(trx)
      ).rows
      const entry = decideRetirement(rows, { now: params.now, cutoff, actor: params.actor })
      if (!entry) return 0
      await ledgerWrite(trx, { base: { deliveries: rows }, entries: [entry] })
      return entry.payload.count
    })
    if (n === 0) break
    retired += n
    batches++
    if (n < batchSize) break
  }
  return { retired, batches }
}

/**
 * The owners with a delivery made before `cutoff`: a walk of the origins' owner log, one probe
 * an owner (a loose index scan), and one more each for its oldest delivery.
 */
async function ownersWithDeliveriesBefore(db: Db, cutoff: Date): Promise<string[]> {
  const { rows } = await sql<{ owner_id: string }>`
    with recursive walk(owner_id) as (
      (select owner_id from delivery_origins order by owner_id limit 1)
      union all
      select (select o.owner_id from delivery_origins o where o.owner_id > w.owner_id order by o.owner_id limit 1)
      from walk w where w.owner_id is not null
    )
    select w.owner_id from walk w
    where w.owner_id is not null
      and exists (select 1 from delivery_origins o where o.owner_id = w.owner_id and o.created_at < ${cutoff})
    order by w.owner_id
  `.execute(db)
  return rows.map((r) => r.owner_id)
}

/**
 * Purges deleted endpoints none of whose deliveries can still move (none pending, retryable or
 * running), one `endpoint.purged` entry each, up to `limit` per call. Their settled deliveries
 * stay until retention retires them. Returns how many endpoints left.
 */
export async function endpointPurge(db: Db, params: { now: Date; actor: string; limit?: number }): Promise<number> {
  return db.transaction().execute(async (trx) => {
    // Only the endpoint rows are locked: nothing can make a deleted endpoint's delivery move
    // again once none is waiting or running (a claim, a redelivery and fan-out all need a live
    // endpoint), so the count read here stays true until commit.
    const rows = (
      // `unsettled` is 0 or 1 (whether any delivery can still move): the first one found ends the probe.
      await sql<EndpointRow & { unsettled: number }>`
        select e.*, u.unsettled from endpoints e
        cross join lateral (
          select count(*)::integer as unsettled from (
            select 1 from deliveries d
            where d.endpoint_id = e.id and d.next_attempt_at is not null limit 1
          ) any_unsettled
        ) u
        where e.deleted_at is not null and u.unsettled = 0
        order by e.deleted_at, e.id limit ${params.limit ?? PURGE_BATCH}
        for update of e skip locked
      `.execute(trx)
    ).rows
    const base: EndpointRow[] = []
    const entries: LedgerEntry[] = []
    for (const { unsettled, ...row } of rows) {
      const entry = decidePurge(row, unsettled, { now: params.now, actor: params.actor })
      if (!entry) continue
      base.push(row)
      entries.push(entry)
    }
    if (entries.length === 0) return 0
    await ledgerWrite(trx, { base: { endpoints: base }, entries })
    return entries.length
  })
}
