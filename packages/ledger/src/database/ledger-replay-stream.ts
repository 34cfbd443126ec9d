/**
 * One projection table verified as a stream: the ledger entries about its rows, ordered by
 * (row id, position), merged with the live rows ordered by id. Each row's entries are folded
 * through the core evolve function as they arrive, the result is compared with the live row,
 * and both are dropped before the next row: memory holds one row of each side and the cursors'
 * batches, whatever the size of the ledger.
 */
import type { SideTable } from './ledger-replay-side-tables.js'
import { sql, type RawBuilder } from 'kysely'
import type { LedgerRecord } from '@hookledger/core'
import type { Trx } from '@hookledger/store'
import { BufferGauge, ServerCursor } from './server-cursor.js'
import { MergedCursor, comparePositions, type RowCursor } from './merged-cursor.js'
import { RowJsonCodec, RowJsonError, sameJson, type RowJson } from './ledger-replay-row-json.js'

/** The projections compared, and the claim's queue heads (checked against their definition). */
export type ReplayTable = 'endpoints' | 'deliveries' | 'endpoint_queue' | SideTable
export type ReplayDifferenceKind = 'changed' | 'missing_live' | 'extra_live' | 'inconsistent'

/** One projection row that differs between the live tables and the rebuild, or a broken history. */
export interface ReplayDifference {
  readonly table: ReplayTable
  readonly key: string
  /**
   * `changed`: both exist (`columns` names what differs); `missing_live`: only the rebuild has
   * it; `extra_live`: only live; `inconsistent`: the row's own history breaks a rule of the
   * engine (`position` names the entry, `problem` says what is wrong).
   */
  readonly kind: ReplayDifferenceKind
  readonly columns: string[]
  readonly live: Record<string, unknown> | null
  readonly replayed: Record<string, unknown> | null
  /** `inconsistent`: the ledger position of the entry at fault (absent when no one entry is). */
  readonly position?: string
  /** `inconsistent`: what is wrong. */
  readonly problem?: string
}

const KINDS: readonly ReplayDifferenceKind[] = ['changed', 'missing_live', 'extra_live', 'inconsistent']
const zeroCounts = () => Object.fromEntries(KINDS.map((k) => [k, 0])) as Record<ReplayDifferenceKind, number>

/** Keeps the first `max` differences and counts them all. */
export class DifferenceSink {
  readonly kept: ReplayDifference[] = []
  total = 0
  readonly counts: Record<ReplayTable, Record<ReplayDifferenceKind, number>> = {
    endpoints: zeroCounts(),
    deliveries: zeroCounts(),
    endpoint_queue: zeroCounts(),
    events: zeroCounts(),
    api_tokens: zeroCounts(),
    access_codes: zeroCounts(),
    embeds: zeroCounts(),
    event_types: zeroCounts(),
    owners: zeroCounts(),
  }
  readonly #max: number

  constructor(max: number) {
    this.#max = max
  }

  /** Whether the next difference would still be kept (else only counted: skip building it). */
  get keeping(): boolean {
    return this.kept.length < this.#max
  }

  add(d: ReplayDifference): void {
    this.count(d.table, d.kind)
    if (this.kept.length < this.#max) this.kept.push(d)
  }

  count(table: ReplayTable, kind: ReplayDifferenceKind): void {
    this.total++
    this.counts[table][kind]++
  }
}

/** Folds one row's entries, in position order, and checks its history on the way. */
export interface EntityFold<R> {
  /** A new row: from nothing, or from its state in a snapshot. */
  start(key: string, from: R | null): void
  apply(e: LedgerRecord): void
  /** The rebuilt row; null when the entries never created it (or removed it). */
  finish(): R | null
}

/** What a running replay has done so far, read by the progress reporter. */
export interface ReplayCounters {
  phase: ReplayTable
  /** Ledger entries folded (both tables' streams: a lease entry is folded for each). */
  rows: number
  /** Rows compared (rebuilt or live). */
  entities: number
  /** Rows (rebuilt or live) held at this moment, and the most ever held at once. */
  held: number
  peakHeld: number
}

/** A snapshot's row as the start stream returns it: the stored JSON beside the row it populates. */
export interface StartRow {
  readonly id: string
  readonly snapshot_row: RowJson
  readonly [column: string]: unknown
}

export interface FoldTableParams<R extends object> {
  readonly table: 'endpoints' | 'deliveries'
  /**
   * The ledger entries about the table's rows, each query ordered by (`keyColumn`, position);
   * several are merged into one stream in that order (merged-cursor.ts).
   */
  readonly ledgerQueries: readonly RawBuilder<unknown>[]
  readonly keyColumn: 'endpoint_id' | 'delivery_id'
  readonly fold: EntityFold<R>
  readonly counters: ReplayCounters
  readonly gauge: BufferGauge
  readonly fetchRows: number
  /** The rows the fold starts from (a snapshot's), ordered by id, as StartRow. */
  readonly start?: RawBuilder<unknown>
  /** Whether the live table is read alongside (to compare). */
  readonly live: boolean
  /** Called once per key, in key order, with what each side holds for it. */
  readonly onKey: (key: string, sides: { replayed: R | null; live: RowJson | null; start: StartRow | null; touched: boolean }) => Promise<void> | void
}

export interface VerifyTableParams<R extends object> extends Omit<FoldTableParams<R>, 'live' | 'onKey'> {
  readonly sink: DifferenceSink
  /** Each snapshot row as it is read (the snapshot's digest is computed from them). */
  readonly onStartRow?: (row: StartRow) => void
}

export interface VerifyTableResult {
  /** Rows the ledger rebuilt. */
  readonly rebuilt: number
  /** Rows of the live table. */
  readonly live: number
  /** Ledger entries folded. */
  readonly entries: number
  /** Snapshot rows started from. */
  readonly started: number
  /** Rebuilt rows the database had to render (see RowJsonCodec). */
  readonly renderedByDatabase: number
}

/**
 * Keys must come strictly increasing in JavaScript's string order for the merge to pair rows:
 * PostgreSQL orders uuids by their bytes, which for the lowercase hex it prints (fixed width,
 * dashes at fixed places, '0'–'9' before 'a'–'f') is the same order. Checked on every row.
 */
function orderError(stream: string, before: string, after: string): Error {
  return new Error(
    `ledger replay: ${stream} came out of key order (${after} after ${before}); the merge relies on PostgreSQL's uuid order being JavaScript's string order`,
  )
}

/** The live rows of a table compared with the fold of its snapshot rows and ledger entries. */
export async function verifyTable<R extends object>(trx: Trx, p: VerifyTableParams<R>): Promise<VerifyTableResult> {
  const codec = await RowJsonCodec.load(trx, p.table)
  const result = await foldTable(trx, {
    ...p,
    live: true,
    onKey: (key, sides) => {
      if (sides.start !== null) p.onStartRow?.(sides.start)
      // A snapshot row no entry touched since is the rebuilt row, already in to_jsonb form.
      if (sides.start !== null && !sides.touched) return compareRendered(p.sink, p.table, key, sides.live, sides.start.snapshot_row)
      return compare(trx, codec, p.sink, p.table, key, sides.live, sides.replayed)
    },
  })
  return { ...result, renderedByDatabase: codec.renderedByDatabase }
}

/**
 * The fold of one table, key by key: the ledger entries (merged), the snapshot rows it starts
 * from, and the live rows, three streams in key order; one row of each held at a time.
 */
export async function foldTable<R extends object>(trx: Trx, p: FoldTableParams<R>): Promise<Omit<VerifyTableResult, 'renderedByDatabase'>> {
  const { table, keyColumn, fold, counters } = p
  counters.phase = table
  const sources: ServerCursor<LedgerRecord>[] = []
  for (const [i, query] of p.ledgerQueries.entries()) {
    sources.push(await ServerCursor.open<LedgerRecord>(trx, `replay_ledger_${table}_${i}`, query, p.fetchRows, p.gauge))
  }
  const ledger: RowCursor<LedgerRecord> =
    sources.length === 1
      ? sources[0]!
      : new MergedCursor(sources, (a, b) => {
          const ka = a[keyColumn] as string
          const kb = b[keyColumn] as string
          return ka < kb ? -1 : ka > kb ? 1 : comparePositions(a.position, b.position)
        })
  const live = p.live
    ? await ServerCursor.open<{ id: string; row: RowJson }>(
        trx,
        `replay_live_${table}`,
        sql`select t.id, to_jsonb(t) as row from ${sql.ref(table)} t order by t.id`,
        p.fetchRows,
        p.gauge,
      )
    : null
  const start = p.start ? await ServerCursor.open<StartRow>(trx, `replay_start_${table}`, p.start, p.fetchRows, p.gauge) : null
  const hold = (n: number) => {
    counters.held += n
    if (counters.held > counters.peakHeld) counters.peakHeld = counters.held
  }
  let rebuilt = 0
  let liveRows = 0
  let started = 0
  let entries = 0
  let lastLedgerKey = ''
  let lastLiveKey = ''
  let lastStartKey = ''
  let failed = false
  try {
    for (;;) {
      if (ledger.needsFetch) await ledger.fill()
      if (live?.needsFetch) await live.fill()
      if (start?.needsFetch) await start.fill()
      const e = ledger.head()
      const l = live?.head()
      const s = start?.head()
      const eKey = e === undefined ? null : (e[keyColumn] as string)
      const lKey = l === undefined ? null : l.id
      const sKey = s === undefined ? null : s.id
      let key: string | null = null
      for (const k of [eKey, lKey, sKey]) if (k !== null && (key === null || k < key)) key = k
      if (key === null) break

      let from: StartRow | null = null
      if (sKey === key) {
        if (key <= lastStartKey) throw orderError(`the snapshot rows of ${table}`, lastStartKey, key)
        lastStartKey = key
        from = s!
        start!.advance()
        started++
      }
      let replayed: R | null = null
      if (eKey === key || from !== null) {
        hold(1)
        fold.start(key, from === null ? null : (rowOf(from) as unknown as R))
        if (eKey === key) {
          if (key <= lastLedgerKey) throw orderError(`the ledger stream of ${table}`, lastLedgerKey, key)
          lastLedgerKey = key
          for (;;) {
            fold.apply(ledger.head()!)
            ledger.advance()
            entries++
            counters.rows++
            if (ledger.needsFetch) await ledger.fill()
            const next = ledger.head()
            if (next === undefined) break
            const nextKey = next[keyColumn] as string
            if (nextKey !== key) {
              if (nextKey < key) throw orderError(`the ledger stream of ${table}`, key, nextKey)
              break
            }
          }
        }
        replayed = fold.finish()
        if (replayed !== null) rebuilt++
      }
      let liveRow: RowJson | null = null
      if (lKey === key) {
        if (key <= lastLiveKey) throw orderError(table, lastLiveKey, key)
        lastLiveKey = key
        hold(1)
        liveRow = l!.row
        live!.advance()
        liveRows++
      }
      await p.onKey(key, { replayed, live: liveRow, start: from, touched: eKey === key })
      counters.entities++
      hold(-((eKey === key || from !== null ? 1 : 0) + (lKey === key ? 1 : 0)))
    }
  } catch (err) {
    failed = true // the transaction ends with the error, and its cursors with it
    throw err
  } finally {
    if (!failed) {
      await ledger.close()
      await live?.close()
      await start?.close()
    }
  }
  return { rebuilt, live: liveRows, entries, started }
}

/** A snapshot row's columns, without the stored JSON it was populated from. */
function rowOf(start: StartRow): Record<string, unknown> {
  const { snapshot_row: _json, ...row } = start
  return row
}

/** The same comparison as `live is distinct from rebuilt`, column by column, on `to_jsonb` forms. */
async function compare(
  trx: Trx,
  codec: RowJsonCodec,
  sink: DifferenceSink,
  table: ReplayTable,
  key: string,
  live: RowJson | null,
  replayed: object | null,
): Promise<void> {
  if (replayed === null) {
    if (live !== null) sink.add({ table, key, kind: 'extra_live', columns: [], live, replayed: null })
    return
  }
  if (live === null && !sink.keeping) {
    sink.count(table, 'missing_live')
    return
  }
  const rendered = await codec.renderRow(trx, replayed)
  if (rendered instanceof RowJsonError) {
    sink.add({
      table,
      key,
      kind: 'inconsistent',
      columns: [],
      live,
      replayed: null,
      problem: `the rebuilt row cannot be stored in ${table}: ${rendered.error}`,
    })
    return
  }
  if (live === null) {
    sink.add({ table, key, kind: 'missing_live', columns: [], live: null, replayed: rendered })
    return
  }
  compareRendered(sink, table, key, live, rendered)
}

/** Both sides in to_jsonb form: the columns that differ, if any. */
function compareRendered(sink: DifferenceSink, table: ReplayTable, key: string, live: RowJson | null, rendered: RowJson): void {
  if (live === null) {
    sink.add({ table, key, kind: 'missing_live', columns: [], live: null, replayed: rendered })
    return
  }
  let columns: string[] | null = null
  for (const c in live) {
    if (!sameJson(live[c], rendered[c])) (columns ??= []).push(c)
  }
  for (const c in rendered) {
    if (!(c in live)) (columns ??= []).push(c)
  }
  if (columns !== null) sink.add({ table, key, kind: 'changed', columns, live, replayed: rendered })
}
