import { sql } from 'kysely'
import type { Db } from '@hookledger/store'
import { enqueuingDecisionRows } from './ledger-enqueuing-decision.js'

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

/** A ledger row as the feed returns it: with the writing transaction's id, its chain key. */
export interface LedgerChainRow extends LedgerRow {
  /** The id (`xid8`, which pg returns as a decimal string) of the transaction that wrote it. */
  readonly tx_id: string
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

const MAX_XID8 = 2n ** 64n - 1n
const MAX_POSITION = 2n ** 63n - 1n

/** Where a feed read starts: after a row in chain order (from a cursor). */
export interface LedgerFeedStart {
  readonly tx_id: string
  readonly position: string
}

/** The cursor that resumes the feed right after `row`: `<tx_id>.<position>`, both decimal. */
export const ledgerCursor = (row: Pick<LedgerChainRow, 'tx_id' | 'position'>): string =>
  `${row.tx_id}.${row.position}`

/**
 * Reads what a client passed as `after`/`cursor`: `<tx_id>.<position>`, a cursor this feed
 * returned. Null when it is not one, or out of range (tx_id beyond xid8, position beyond bigint).
 */
export function parseLedgerCursor(value: string): LedgerFeedStart | null {
  const chain = /^(\d{1,20})\.(\d{1,19})$/.exec(value)
  if (chain) {
    const [, tx, position] = chain as unknown as [string, string, string]
    if (BigInt(tx) > MAX_XID8 || BigInt(position) > MAX_POSITION) return null
    return { tx_id: BigInt(tx).toString(), position: BigInt(position).toString() }
  }
  return null
}

/** The rows with a chain key after `start`. */
const startSql = (start: LedgerFeedStart | undefined) =>
  start === undefined ? sql`` : sql`and (tx_id, position) > (${start.tx_id}::xid8, ${start.position}::bigint)`

/**
 * The feed's query, for `ledgerRead` and for tests that EXPLAIN it.
 *
 * Chain order is (tx_id, position): a transaction takes its xid at its first write and draws
 * positions later, so positions alone commit out of order, but every transaction still
 * running has an xid ≥ the snapshot's xmin and every future one a larger xid, so below xmin
 * nothing can ever appear before a row already read. The range `(tx_id, position) > cursor`
 * and `tx_id < xmin` is one range scan of ledger_chain_order_idx (the baseline migration).
 */
export function ledgerReadQuery(
  params: LedgerFilter & { start?: LedgerFeedStart | undefined; limit: number },
) {
  return sql<LedgerChainRow>`
    select position, tx_id, occurred_at, owner_id, kind, endpoint_id, delivery_id, event_id,
      payload, actor
    from ledger
    where tx_id < pg_snapshot_xmin(pg_current_snapshot())
      ${startSql(params.start)}
      ${filterSql(params)}
    order by tx_id, position limit ${params.limit}
  `
}

/**
 * The ledger in chain order — (tx_id, position) — after `after`, a page at a time.
 * `next_cursor` is the last row's cursor, `<tx_id>.<position>` (`ledgerCursor`), when the page
 * was full, null otherwise; a tailer that reached the end resumes with the cursor of the last
 * row it read.
 *
 * `after` is a cursor this feed returned; cursors never skip or repeat. A string that is not
 * one throws: callers validate first (`parseLedgerCursor`).
 *
 * Only rows written by transactions older than every transaction still running are returned,
 * so a slow writer holds the feed back instead of being jumped over.
 */
export async function ledgerRead(
  db: Db,
  params: LedgerFilter & { after?: string | undefined; limit: number },
): Promise<{ data: LedgerChainRow[]; next_cursor: string | null }> {
  const { after, ...rest } = params
  let start: LedgerFeedStart | undefined
  if (after !== undefined) {
    const parsed = parseLedgerCursor(after)
    if (!parsed) throw new TypeError(`not a ledger cursor: ${JSON.stringify(after)}`)
    start = parsed
  }
  const rows = (await ledgerReadQuery({ ...rest, start }).execute(db)).rows
  const last = rows[rows.length - 1]
  return {
    data: rows,
    next_cursor: rows.length === params.limit && last ? ledgerCursor(last) : null,
  }
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
  const columns = sql`position, occurred_at, owner_id, kind, endpoint_id, delivery_id, event_id, payload, actor`
  // A delivery's trail starts with what enqueued it: in ledger format 3 its event's fan-out decision.
  const decision = filter.delivery_id !== undefined
    ? sql`union all ${enqueuingDecisionRows(columns, filter.delivery_id, filterSql({ ...filter, delivery_id: undefined }))}`
    : sql``
  const rows = (
    await sql<LedgerRow>`
      select ${columns} from ledger where true ${filterSql(filter)}
      ${decision}
      order by position limit ${limit + 1}
    `.execute(db)
  ).rows
  return { data: rows.slice(0, limit), truncated: rows.length > limit }
}
