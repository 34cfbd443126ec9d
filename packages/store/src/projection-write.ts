/**
 * Projection rows and entries as `hookledger_write` reads them: rows exactly as the core
 * `evolve*` functions returned them, in one jsonb array the function expands with
 * `jsonb_populate_recordset(null::<table>, …)`, so one call writes a whole batch whatever its size.
 */
import type { DeliveryRow, EndpointRow } from '@hookledger/core'

type Row = object

/** The columns of each projection, in table order. Typed so a new column cannot be forgotten. */
export const ENDPOINT_COLUMNS = [
  'id', 'owner_id', 'url', 'description', 'event_types', 'embed_id', 'secret_sealed',
  'secret_key_id', 'prev_secret_sealed', 'prev_secret_key_id', 'prev_secret_expires_at',
  'enabled', 'disabled_reason', 'failing_since', 'busy_until', 'busy_delivery_id', 'deleted_at',
  'created_at', 'updated_at', 'signature_scheme', 'v1a_key_sealed', 'v1a_public_key',
  'prev_v1a_key_sealed', 'prev_v1a_public_key', 'prev_v1a_key_expires_at',
  'headers', 'secret_headers_sealed', 'follow_redirects', 'rate_limit', 'rate_tat',
  'rate_adapted_per_second', 'ordering', 'mtls', 'oauth2',
] as const satisfies readonly (keyof EndpointRow)[]
export const DELIVERY_COLUMNS = [
  'id', 'owner_id', 'endpoint_id', 'event_id', 'event_type', 'state', 'run', 'run_started_at',
  'attempts', 'next_attempt_at', 'claimed_by', 'lease_until', 'last_status', 'last_error',
  'created_at', 'updated_at', 'snoozes', 'snoozed_ms',
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
export function rowsForJson(rows: readonly Row[]): object[] {
  const out: object[] = new Array(rows.length)
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i] as Record<string, unknown>
    let copy: Record<string, unknown> | null = null
    for (const key in row) {
      const value = row[key]
      if (value instanceof Uint8Array) {
        copy ??= { ...row }
        copy[key] = byteaText(value)
      }
    }
    out[i] = copy ?? row
  }
  return out
}

/** Bytes as jsonb_populate_record reads them for a bytea column: `\\x` and hex. */
function byteaText(value: Uint8Array): string {
  const bytes = Buffer.isBuffer(value) ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength)
  return '\\x' + bytes.toString('hex')
}

/** The rows as one JSON array (rowsForJson). */
export const rowsToJson = (rows: readonly Row[]): string => JSON.stringify(rowsForJson(rows))

/** Whether two column values are the same as the database would store them. */
function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (a === null || b === null || a === undefined || b === undefined) return false
  if (a instanceof Date && b instanceof Date) return a.getTime() === b.getTime()
  if (a instanceof Uint8Array && b instanceof Uint8Array) return Buffer.compare(a, b) === 0
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => sameValue(x, b[i]))
  return false
}

/**
 * A changed row as `hookledger_write` lays it over the row as stored: its id and the columns
 * whose value differs from `before` (the row as the caller read it), as rowsForJson renders them.
 * A settle changes a handful of an endpoint's 25 columns: its sealed secrets never travel again.
 */
export function rowPatch<R extends { id: string }>(row: R, before: R): object {
  const patch: Record<string, unknown> = { id: row.id }
  for (const key in row) {
    const value = row[key] as unknown
    if (sameValue(value, (before as Record<string, unknown>)[key])) continue
    patch[key] = value instanceof Uint8Array ? byteaText(value) : value
  }
  return patch
}
