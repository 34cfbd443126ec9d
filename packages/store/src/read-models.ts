import { sql } from 'kysely'
import { evolveDelivery, type AttemptRow, type DeliveryRow, type DeliveryState, type EndpointRow, type LedgerRecord } from '@hookledger/core'
import type { Db } from './database/database.js'
import { deliveryLedgerEntries } from './delivery/delivery-ledger-entries.js'

/** A page of rows and the opaque cursor of the next page. */
export interface Page<T> {
  readonly data: T[]
  readonly next_cursor: string | null
}

/** A page's opaque cursor: its parts as base64url JSON. */
export const encodeCursor = (parts: unknown[]) => Buffer.from(JSON.stringify(parts)).toString('base64url')

/** A cursor that is not one of ours (a page refuses it). */
export class InvalidCursorError extends Error {}

/** A cursor's parts, when `read` takes them for its page's; otherwise `InvalidCursorError`. */
export function decodeCursorAs<T>(cursor: string, read: (parts: unknown[]) => T | undefined): T {
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown
    const parts = Array.isArray(v) ? read(v) : undefined
    if (parts !== undefined) return parts
  } catch {
    // fall through
  }
  throw new InvalidCursorError('cursor is not valid')
}

const decodeCursor = (cursor: string): [string, string] =>
  decodeCursorAs(cursor, (v) =>
    v.length === 2 && typeof v[0] === 'string' && typeof v[1] === 'string' && !Number.isNaN(Date.parse(v[0])) && /^[0-9a-f-]{36}$/.test(v[1])
      ? [v[0], v[1]]
      : undefined,
  )

/** The cursor of a (created_at, id) ordered page, and its reading. */
export const encodeDeliveryCursor = (row: { created_at: Date; id: string }): string =>
  encodeCursor([row.created_at.toISOString(), row.id])
export const decodeDeliveryCursor = (cursor: string): [string, string] => decodeCursor(cursor)

export { LEDGER_RECORD_COLUMNS } from './ledger-record-columns.js'

/** One live endpoint of this owner, or null (another owner's id looks exactly like a missing one). */
export async function endpointGet(db: Db, owner_id: string, id: string): Promise<EndpointRow | null> {
  const row = await db
    .selectFrom('endpoints')
    .selectAll()
    .where('id', '=', id)
    .where('owner_id', '=', owner_id)
    .where('deleted_at', 'is', null)
    .executeTakeFirst()
  return row ?? null
}

/** A live endpoint's v1a public keys, whoever owns it (they are published), or null. */
export async function endpointV1aKeys(
  db: Db,
  id: string,
): Promise<Pick<EndpointRow, 'id' | 'signature_scheme' | 'v1a_public_key' | 'prev_v1a_public_key' | 'prev_v1a_key_expires_at'> | null> {
  const row = await db
    .selectFrom('endpoints')
    .select(['id', 'signature_scheme', 'v1a_public_key', 'prev_v1a_public_key', 'prev_v1a_key_expires_at'])
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .$castTo<Pick<EndpointRow, 'id' | 'signature_scheme' | 'v1a_public_key' | 'prev_v1a_public_key' | 'prev_v1a_key_expires_at'>>()
    .executeTakeFirst()
  return row ?? null
}

/** The owner's live endpoints, oldest first. */
export async function endpointList(
  db: Db,
  owner_id: string,
  params: { limit: number; cursor?: string | undefined },
): Promise<Page<EndpointRow>> {
  const after = params.cursor ? decodeCursor(params.cursor) : null
  const rows = (
    await sql<EndpointRow>`
      select * from endpoints where owner_id = ${owner_id} and deleted_at is null
      ${after ? sql`and (created_at, id) > (${after[0]}::timestamptz, ${after[1]}::uuid)` : sql``}
      order by created_at, id limit ${params.limit + 1}
    `.execute(db)
  ).rows
  const data = rows.slice(0, params.limit)
  const last = data[data.length - 1]
  return {
    data,
    next_cursor: rows.length > params.limit && last ? encodeCursor([last.created_at.toISOString(), last.id]) : null,
  }
}

/** An endpoint's deliveries, newest first, optionally in one state. */
export async function deliveryList(
  db: Db,
  owner_id: string,
  endpoint_id: string,
  params: { limit: number; cursor?: string | undefined; state?: DeliveryState | undefined },
): Promise<Page<DeliveryRow>> {
  const before = params.cursor ? decodeCursor(params.cursor) : null
  const rows = (
    await sql<DeliveryRow>`
      select * from deliveries where endpoint_id = ${endpoint_id}::uuid and owner_id = ${owner_id}
      ${params.state ? sql`and state = ${params.state}` : sql``}
      ${before ? sql`and (created_at, id) < (${before[0]}::timestamptz, ${before[1]}::uuid)` : sql``}
      order by created_at desc, id desc limit ${params.limit + 1}
    `.execute(db)
  ).rows
  const data = rows.slice(0, params.limit)
  const last = data[data.length - 1]
  return {
    data,
    next_cursor: rows.length > params.limit && last ? encodeCursor([last.created_at.toISOString(), last.id]) : null,
  }
}

/** One delivery of this owner, or null. */
export async function deliveryGet(db: Db, owner_id: string, id: string): Promise<DeliveryRow | null> {
  const row = await db.selectFrom('deliveries').selectAll().where('id', '=', id).where('owner_id', '=', owner_id).executeTakeFirst()
  return row ?? null
}

/**
 * One delivery of this owner as its own ledger entries rebuild it, or null when the ledger has
 * none. For a retired delivery (gone from `deliveries`) this is its row as it was when it
 * left: the retirement names it only in its payload, so it is not among these entries. Its
 * enqueue may be its event's `fanout.decided` (ledger format 3: deliveryLedgerEntries).
 */
export async function deliveryFromLedger(db: Db, owner_id: string, id: string): Promise<DeliveryRow | null> {
  const entries = (await deliveryLedgerEntries(db, owner_id, [id])).get(id)!
  return entries.reduce<DeliveryRow | null>((row, e) => evolveDelivery(row, e), null)
}

/** The runs of a delivery: who started each redelivery, and when. */
export interface DeliveryRun {
  readonly run: number
  readonly started_at: Date
  readonly actor: string
  readonly previous_attempts: number | null
}

/** Every attempt of a delivery across all its runs, in order, plus how each run began. */
export async function attemptList(
  db: Db,
  owner_id: string,
  delivery_id: string,
): Promise<{ attempts: AttemptRow[]; runs: DeliveryRun[] }> {
  const attempts = await db
    .selectFrom('delivery_attempts')
    .selectAll()
    .where('delivery_id', '=', delivery_id)
    .where('owner_id', '=', owner_id)
    .orderBy('ledger_position')
    .execute()
  // How each run began: its enqueue (a row, or its event's fan-out decision) or a redelivery.
  const runs = (await deliveryLedgerEntries(db, owner_id, [delivery_id])).get(delivery_id)!
    .filter((e) => e.kind === 'delivery.enqueued' || e.kind === 'delivery.redelivered')
    .map((e) => ({
      run: e.kind === 'delivery.enqueued' ? 1 : e.payload.run,
      started_at: e.occurred_at,
      actor: e.actor,
      previous_attempts: e.kind === 'delivery.enqueued' ? null : e.payload.previous_attempts,
    }))
  return { attempts, runs }
}
