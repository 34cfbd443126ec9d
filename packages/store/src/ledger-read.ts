import { sql } from 'kysely'
import type { Db } from './database.js'

/** A ledger row as operators read it. */
export interface LedgerRow {
  readonly position: string
  readonly occurred_at: Date
  readonly owner_id: string
  readonly kind: string
  readonly endpoint_id: string | null
  readonly delivery_id: string | null
  readonly event_id: string | null
  readonly payload: Record<string, unknown>
  readonly actor: string
}

/** Filters of a ledger read; all optional, combined with `and`. */
export interface LedgerFilter {
  readonly owner_id?: string | undefined
  readonly endpoint_id?: string | undefined
  readonly delivery_id?: string | undefined
  readonly event_id?: string | undefined
}

const filterSql = (f: LedgerFilter) => sql`
  ${f.owner_id !== undefined ? sql`and owner_id = ${f.owner_id}` : sql``}
  ${f.endpoint_id !== undefined ? sql`and endpoint_id = ${f.endpoint_id}::uuid` : sql``}
  ${f.delivery_id !== undefined ? sql`and delivery_id = ${f.delivery_id}::uuid` : sql``}
  ${f.event_id !== undefined ? sql`and event_id = ${f.event_id}` : sql``}
`

/**
 * The ledger in position order after `after`, a page at a time; `next_cursor` is the position
 * to pass as `after` next (null when the page was not full).
 *
 * Positions are drawn at insert, not at commit, so a transaction still open can later commit
 * rows below a position already read. Only rows written by transactions older than every
 * transaction still running are returned, so a reader that follows `next_cursor` never skips a
 * row: a slow writer holds the feed back instead of being jumped over.
 */
export async function ledgerRead(
  db: Db,
  params: LedgerFilter & { after?: string | undefined; limit: number },
): Promise<{ data: LedgerRow[]; next_cursor: string | null }> {
  const rows = (
    await sql<LedgerRow>`
      select position, occurred_at, owner_id, kind, endpoint_id, delivery_id, event_id, payload,
        actor
      from ledger
      where position > ${params.after ?? '0'}::bigint
        and tx_id < pg_snapshot_xmin(pg_current_snapshot())
        ${filterSql(params)}
      order by position limit ${params.limit}
    `.execute(db)
  ).rows
  const last = rows[rows.length - 1]
  return { data: rows, next_cursor: rows.length === params.limit && last ? last.position : null }
}

/**
 * Every entry about one delivery, endpoint or event (as filtered), in order, up to `limit`:
 * the audit trail an operator reads to say why something was or was not delivered.
 */
export async function ledgerTrail(
  db: Db,
  filter: LedgerFilter,
  limit: number,
): Promise<{ data: LedgerRow[]; truncated: boolean }> {
  const rows = (
    await sql<LedgerRow>`
      select position, occurred_at, owner_id, kind, endpoint_id, delivery_id, event_id, payload,
        actor
      from ledger where true ${filterSql(filter)}
      order by position limit ${limit + 1}
    `.execute(db)
  ).rows
  return { data: rows.slice(0, limit), truncated: rows.length > limit }
}
