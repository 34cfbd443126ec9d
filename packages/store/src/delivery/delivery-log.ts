import { sql } from 'kysely'
import type { DeliveryRow, DeliveryState } from '@hookledger/core'
import type { Db } from '../database/database.js'
import { decodeDeliveryCursor, encodeDeliveryCursor, type Page } from '../read-models.js'

/** Filters of the owner's delivery log; all optional, combined with `and`. */
export interface DeliveryLogFilter {
  readonly endpoint_id?: string | undefined
  readonly state?: DeliveryState | undefined
  readonly event_type?: string | undefined
  /** Created at or after. */
  readonly since?: Date | undefined
  /** Created before. */
  readonly until?: Date | undefined
}

/**
 * The log's query, for `deliveryLog` and for the test that EXPLAINs it: newest first on
 * (created_at, id), one range scan of delivery_origins_owner_log_idx (migration 0002), or of
 * delivery_origins_endpoint_list_idx when one endpoint is named. Deleted endpoints' deliveries are
 * left out (their attempts read as missing too).
 */
export function deliveryLogQuery(
  owner_id: string,
  filter: DeliveryLogFilter & { before?: readonly [string, string] | null; limit: number },
) {
  const f = filter
  return sql<DeliveryRow>`
    select d.* from deliveries d
    where d.owner_id = ${owner_id}
      ${f.endpoint_id !== undefined ? sql`and d.endpoint_id = ${f.endpoint_id}::uuid` : sql``}
      ${f.state !== undefined ? sql`and d.state = ${f.state}` : sql``}
      ${f.event_type !== undefined ? sql`and d.event_type = ${f.event_type}` : sql``}
      ${f.since !== undefined ? sql`and d.created_at >= ${f.since}` : sql``}
      ${f.until !== undefined ? sql`and d.created_at < ${f.until}` : sql``}
      ${f.before ? sql`and (d.created_at, d.id) < (${f.before[0]}::timestamptz, ${f.before[1]}::uuid)` : sql``}
      and exists (select 1 from endpoints e where e.id = d.endpoint_id and e.deleted_at is null)
    order by d.created_at desc, d.id desc
    limit ${f.limit}
  `
}

/** A page of the owner's delivery log, newest first. Throws `InvalidCursorError` on a bad cursor. */
export async function deliveryLog(
  db: Db,
  owner_id: string,
  params: DeliveryLogFilter & { limit: number; cursor?: string | undefined },
): Promise<Page<DeliveryRow>> {
  const before = params.cursor ? decodeDeliveryCursor(params.cursor) : null
  const rows = (await deliveryLogQuery(owner_id, { ...params, before, limit: params.limit + 1 }).execute(db)).rows
  const data = rows.slice(0, params.limit)
  const last = data[data.length - 1]
  return { data, next_cursor: rows.length > params.limit && last ? encodeDeliveryCursor(last) : null }
}
