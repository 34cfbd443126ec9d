/**
 * A projection row in the form `to_jsonb(<table row>)` gives it: what `ledger replay` compares
 * and reports, for the live row (rendered by the database) and for the rebuilt one (rendered
 * here). The rebuilt row must come out exactly as if the writers' own serialization
 * (`rowsToJson`, then `jsonb_populate_recordset(null::<table>, …)`) had stored it, or a healthy
 * row would read as changed.
 *
 * The columns and their types are read from the catalog. Values of the shapes the evolve
 * functions produce are rendered in JavaScript (uuid and text as they are, integers, booleans,
 * bytea as `\x…` hex, text[] as arrays, flat jsonb maps of strings with their keys in jsonb's order, timestamptz as ISO-8601 with the fraction trimmed and
 * `+00:00`: the replay's transaction runs with `TimeZone = UTC` and `bytea_output = hex`).
 * Anything else (a column type not listed, a string where a number belongs, a year outside
 * 1–9999, a lone UTF-16 surrogate …) is rendered by the database itself, one row per query.
 */
import { sql } from 'kysely'
import type { Trx } from '@hookledger/store'
import { rowsToJson } from '@hookledger/store'

/** A row as `to_jsonb` renders it. */
export type RowJson = Record<string, unknown>

/** The database cannot hold a rebuilt row (a value its column type refuses). */
export class RowJsonError {
  constructor(readonly error: string) {}
}

const UNSURE = Symbol('unsure')
type Encode = (value: unknown) => unknown

const LOWER_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
// A high surrogate without its low half, or a low one without its high half.
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/** Text jsonb stores as it is: no NUL (text cannot hold it), no lone surrogate (jsonb refuses it). */
const plainText = (s: string): boolean => !s.includes('\u0000') && !LONE_SURROGATE.test(s)

const two = (n: number) => (n < 10 ? '0' : '') + n

/** `to_jsonb` of a timestamptz under `TimeZone = UTC`: `2024-05-01T12:00:00.12+00:00`. */
export function timestamptzJson(d: Date): string | null | typeof UNSURE {
  const t = d.getTime()
  if (!Number.isFinite(t)) return null // JSON.stringify writes an invalid Date as null
  const year = d.getUTCFullYear()
  if (year < 1 || year > 9999) return UNSURE
  let s = `${String(year).padStart(4, '0')}-${two(d.getUTCMonth() + 1)}-${two(d.getUTCDate())}T${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())}`
  const ms = d.getUTCMilliseconds()
  if (ms !== 0) s += '.' + String(ms).padStart(3, '0').replace(/0+$/, '')
  return s + '+00:00'
}

const integer =
  (min: number, max: number): Encode =>
  (v) =>
    typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max ? v : UNSURE

/** Renderers by `format_type` of the column; a type not listed is always left to the database. */
const ENCODERS: Record<string, Encode> = {
  uuid: (v) => (typeof v === 'string' && LOWER_UUID.test(v) ? v : UNSURE),
  text: (v) => (typeof v === 'string' && plainText(v) ? v : UNSURE),
  integer: integer(-2_147_483_648, 2_147_483_647),
  smallint: integer(-32_768, 32_767),
  bigint: integer(Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER),
  boolean: (v) => (typeof v === 'boolean' ? v : UNSURE),
  'timestamp with time zone': (v) => (v instanceof Date ? timestamptzJson(v) : UNSURE),
  bytea: (v) =>
    v instanceof Uint8Array ? '\\x' + Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('hex') : UNSURE,
  'text[]': (v) =>
    Array.isArray(v) && v.every((x) => x === null || (typeof x === 'string' && plainText(x))) ? [...v] : UNSURE,
  // The shape endpoints' jsonb columns hold (custom headers): a flat map of strings, keys in jsonb's order.
  jsonb: (v) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v) || v instanceof Date || v instanceof Uint8Array) return UNSURE
    const entries = Object.entries(v)
    if (!entries.every(([k, x]) => plainText(k) && typeof x === 'string' && plainText(x))) return UNSURE
    return Object.fromEntries(entries.sort(([a], [b]) => jsonbKeyOrder(a, b)))
  },
}

interface Column {
  readonly name: string
  readonly encode: Encode | null
}

/** jsonb's key order: shorter keys first, then bytewise. */
function jsonbKeyOrder(a: string, b: string): number {
  if (a.length !== b.length) return a.length - b.length
  return Buffer.compare(Buffer.from(a), Buffer.from(b))
}

/** Renders rebuilt rows of one projection table as `to_jsonb` would. */
export class RowJsonCodec {
  readonly table: 'endpoints' | 'deliveries'
  /** In jsonb key order, so a rendered row lists its keys as `to_jsonb` does. */
  readonly columns: readonly Column[]
  /** Rows the database had to render (a value outside the shapes rendered here). */
  renderedByDatabase = 0

  private constructor(table: 'endpoints' | 'deliveries', columns: readonly Column[]) {
    this.table = table
    this.columns = columns
  }

  static async load(trx: Trx, table: 'endpoints' | 'deliveries'): Promise<RowJsonCodec> {
    const cols = (
      await sql<{ name: string; type: string }>`
        select a.attname as name, format_type(a.atttypid, a.atttypmod) as type
        from pg_attribute a
        where a.attrelid = ${table}::regclass and a.attnum > 0 and not a.attisdropped
        order by a.attnum
      `.execute(trx)
    ).rows
    const columns = cols
      .map((c) => ({ name: c.name, encode: ENCODERS[c.type] ?? null }))
      .sort((a, b) => jsonbKeyOrder(a.name, b.name))
    return new RowJsonCodec(table, columns)
  }

  /** The row rendered here, or null when some value needs the database. */
  render(row: object): RowJson | null {
    const r = row as Record<string, unknown>
    const out: RowJson = {}
    for (const c of this.columns) {
      const v = r[c.name]
      if (v === null || v === undefined) {
        out[c.name] = null
        continue
      }
      if (c.encode === null) return null
      const j = c.encode(v)
      if (j === UNSURE) return null
      out[c.name] = j
    }
    return out
  }

  /**
   * The row as the database renders it: stored the writers' way and read back with `to_jsonb`.
   * A value its column refuses is an answer too (the rebuilt row cannot exist), not a failed
   * replay: the statement runs under a savepoint.
   */
  async renderByDatabase(trx: Trx, row: object): Promise<RowJson | RowJsonError> {
    this.renderedByDatabase++
    await sql`savepoint replay_render`.execute(trx)
    try {
      const r = await sql<{ j: RowJson }>`
        select to_jsonb(r) as j from jsonb_populate_recordset(null::${sql.ref(this.table)}, ${rowsToJson([row])}::jsonb) r
      `.execute(trx)
      await sql`release savepoint replay_render`.execute(trx)
      return r.rows[0]!.j
    } catch (err) {
      await sql`rollback to savepoint replay_render`.execute(trx)
      return new RowJsonError(err instanceof Error ? err.message : String(err))
    }
  }

  /** `render`, else `renderByDatabase`. */
  async renderRow(trx: Trx, row: object): Promise<RowJson | RowJsonError> {
    return this.render(row) ?? this.renderByDatabase(trx, row)
  }
}

/** Whether two rendered values are equal (rows are flat: scalars and arrays of scalars). */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) return false
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i], b[i])) return false
    return true
  }
  if (a !== null && b !== null && typeof a === 'object' && typeof b === 'object') {
    return JSON.stringify(a) === JSON.stringify(b)
  }
  return false
}
