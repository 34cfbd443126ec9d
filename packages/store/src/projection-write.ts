/**
 * Writes projection rows exactly as the core `evolve*` functions returned them. Rows travel as
 * one jsonb array and are expanded with `jsonb_populate_recordset(null::<table>, …)`, so one
 * statement writes a whole batch whatever its size.
 */
import { sql, type RawBuilder } from 'kysely'
import type { DeliveryRow, EndpointRow } from '@hookledger/core'
import type { Trx } from './database.js'

type Row = object

/** The columns of each projection, in table order. Typed so a new column cannot be forgotten. */
export const ENDPOINT_COLUMNS = [
  'id', 'owner_id', 'url', 'description', 'event_types', 'embed_id', 'secret_sealed',
  'secret_key_id', 'prev_secret_sealed', 'prev_secret_key_id', 'prev_secret_expires_at',
  'enabled', 'disabled_reason', 'failing_since', 'busy_until', 'busy_delivery_id', 'deleted_at',
  'created_at', 'updated_at',
] as const satisfies readonly (keyof EndpointRow)[]
export const DELIVERY_COLUMNS = [
  'id', 'owner_id', 'endpoint_id', 'event_id', 'event_type', 'state', 'run', 'run_started_at',
  'attempts', 'next_attempt_at', 'claimed_by', 'lease_until', 'last_status', 'last_error',
  'created_at', 'updated_at',
] as const satisfies readonly (keyof DeliveryRow)[]

// Compile-time check that each list names every field of its row type.
type Missing<R, L extends readonly string[]> = Exclude<keyof R, L[number]>
const complete: [Missing<EndpointRow, typeof ENDPOINT_COLUMNS>, Missing<DeliveryRow, typeof DELIVERY_COLUMNS>] extends [never, never] ? true : false = true
void complete

/**
 * JSON for jsonb_populate_recordset: bytea as `\x…` hex, timestamps as ISO strings. Rows are
 * flat, so only top-level byte columns need converting; a row without any is serialized as is
 * (no per-key replacer: this runs on every claim and settle).
 */
export function rowsToJson(rows: readonly Row[]): string {
  const out: object[] = new Array(rows.length)
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i] as Record<string, unknown>
    let copy: Record<string, unknown> | null = null
    for (const key in row) {
      const value = row[key]
      if (value instanceof Uint8Array) {
        copy ??= { ...row }
        const bytes = Buffer.isBuffer(value) ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength)
        copy[key] = '\\x' + bytes.toString('hex')
      }
    }
    out[i] = copy ?? row
  }
  return JSON.stringify(out)
}

const ident = (s: string) => sql.ref(s)
const list = (cols: readonly string[], prefix?: string) =>
  sql.join(cols.map((c) => sql.raw(prefix ? `${prefix}.${c}` : c)))

/** The statement of {@link projectionUpsert}, to run alone or as one part of a larger statement. */
export function projectionUpsertSql(
  table: 'endpoints' | 'deliveries',
  columns: readonly string[],
  key: string,
  rows: readonly Row[],
): RawBuilder<unknown> {
  const updatable = columns.filter((c) => c !== key)
  return sql`
    insert into ${ident(table)} (${list(columns)})
    select ${list(columns, 'r')} from jsonb_populate_recordset(null::${ident(table)}, ${rowsToJson(rows)}::jsonb) r
    on conflict (${sql.raw(key)}) do update set (${list(updatable)}) = (${list(updatable, 'excluded')})
  `
}

/** Inserts or fully overwrites rows of `table`, keyed by `key`. */
export async function projectionUpsert(
  trx: Trx,
  table: 'endpoints' | 'deliveries',
  columns: readonly string[],
  key: string,
  rows: readonly Row[],
): Promise<void> {
  if (rows.length === 0) return
  await projectionUpsertSql(table, columns, key, rows).execute(trx)
}

/** The claim a running delivery was last settled under; a settle applies only if it still holds. */
export interface ClaimGuard {
  readonly id: string
  readonly claimed_by: string
  readonly lease_until: Date
}

/**
 * Overwrites running deliveries whose claim is still the one the worker holds (a rescuer may
 * have taken a row back after its lease expired). Returns the ids actually written.
 *
 * Each row travels with its guard in one JSON element and is found by primary key (the id list
 * gives the planner that path whatever its estimates, and the join is on the id). The state
 * test is written `is not distinct from`: the same test as `=` for this non-null column, but
 * not one the planner can answer from the partial index `deliveries_running_idx`, whose dead
 * entries pile up between vacuums and which it would otherwise pick on a stale estimate.
 */
export async function deliveriesWriteIfClaimed(
  trx: Trx,
  rows: readonly DeliveryRow[],
  guards: readonly ClaimGuard[],
): Promise<Set<string>> {
  if (rows.length === 0) return new Set()
  const updatable = DELIVERY_COLUMNS.filter((c) => c !== 'id')
  const guardById = new Map(guards.map((g) => [g.id, g]))
  const items = rows.map((row) => {
    const g = guardById.get(row.id)
    return { ...row, guard_claimed_by: g?.claimed_by ?? null, guard_lease_until: g?.lease_until ?? null }
  })
  const result = await sql<{ id: string }>`
    update deliveries d set (${list(updatable)}) = (${list(updatable, 'r')})
    from jsonb_array_elements(${rowsToJson(items)}::jsonb) x
    cross join lateral jsonb_populate_record(null::deliveries, x) r
    where d.id = any(${rows.map((r) => r.id)}::uuid[])
      and d.id = (x->>'id')::uuid
      and d.claimed_by = x->>'guard_claimed_by'
      and d.lease_until = (x->>'guard_lease_until')::timestamptz
      and d.state is not distinct from 'running'
    returning d.id
  `.execute(trx)
  return new Set(result.rows.map((r) => r.id))
}
