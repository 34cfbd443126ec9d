/**
 * What a drain writes, from PostgreSQL's own counters: WAL bytes (the LSN before and after), and
 * per table the rows updated and how many of those updates were HOT (heap-only: no new index
 * entry, the new version on the same page), the heap tuples written (inserts and updates) and
 * the index entries written. PostgreSQL counts no index insertions: the ledger's are exact
 * (append-only: each of its indexes' predicates counted over the rows appended since the mark);
 * the other tables' are an upper bound, each insert and each update that is not HOT times the
 * table's indexes (a partial index whose predicate the new version fails gets none).
 */
import { sql } from 'kysely'
import type { Db } from '@hookledger/store'
import { round } from './util.js'

const TABLES = ['delivery_states', 'delivery_origins', 'endpoints', 'endpoint_queue', 'ledger']

interface TableCounts {
  updates: number
  hot: number
  inserts: number
  indexes: number
}

export interface TableWritesMark {
  readonly lsn: string
  /** The newest ledger position then. */
  readonly position: string
  readonly tables: Record<string, TableCounts>
}

/** Index entries the ledger rows after `position` have: each index's predicate counted over them. */
async function ledgerIndexEntries(admin: Db, position: string): Promise<number> {
  const indexes = (
    await sql<{ pred: string | null }>`
      select pg_get_expr(i.indpred, i.indrelid) as pred from pg_index i where i.indrelid = 'ledger'::regclass
    `.execute(admin)
  ).rows
  const counts = sql.join(indexes.map((i) => sql`count(*) filter (where ${sql.raw(i.pred ?? 'true')})`), sql` + `)
  const r = await sql<{ n: string }>`select (${counts})::text as n from ledger where position > ${position}::bigint`.execute(admin)
  return Number(r.rows[0]!.n)
}

/**
 * The counters now. `minStateInserts`: first wait (up to 12 s) until the state rows show that
 * many inserts — the fan-out's backends report theirs when idle, up to a second late, and
 * would otherwise land in the drain's figures.
 */
export async function tableWritesMark(admin: Db, minStateInserts = 0): Promise<TableWritesMark> {
  const deadline = performance.now() + 12_000
  let mark = await tableWritesMarkNow(admin)
  while ((mark.tables['delivery_states']?.inserts ?? 0) < minStateInserts && performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100))
    mark = await tableWritesMarkNow(admin)
  }
  return mark
}

async function tableWritesMarkNow(admin: Db): Promise<TableWritesMark> {
  const { lsn, position } = (
    await sql<{ lsn: string; position: string }>`
      select pg_current_wal_lsn()::text as lsn, coalesce((select max(position) from ledger), 0)::text as position
    `.execute(admin)
  ).rows[0]!
  // A ledger partition counts as the ledger (its indexes are the parent's, one each).
  const rows = (
    await sql<{ relname: string; upd: string; hot: string; ins: string; idx: string }>`
      select coalesce(p.relname, t.relname) as relname, sum(t.n_tup_upd)::text as upd, sum(t.n_tup_hot_upd)::text as hot,
             sum(t.n_tup_ins)::text as ins,
             max((select count(*) from pg_index i where i.indrelid = t.relid))::text as idx
      from pg_stat_user_tables t
      left join pg_inherits h on h.inhrelid = t.relid
      left join pg_class p on p.oid = h.inhparent
      where t.schemaname = current_schema() and coalesce(p.relname, t.relname) = any(${TABLES}::text[])
      group by 1
    `.execute(admin)
  ).rows
  return {
    lsn,
    position,
    tables: Object.fromEntries(rows.map((r) => [r.relname, { updates: Number(r.upd), hot: Number(r.hot), inserts: Number(r.ins), indexes: Number(r.idx) }])),
  }
}

/**
 * Per delivery since `before`: WAL bytes, and per table updates and the HOT share. Backends
 * report their counters when idle (at most once a second, at the latest after 10 s), so this
 * waits until the state rows show at least `minStateUpdates` updates, or 12 s have passed.
 */
export async function tableWritesSince(admin: Db, before: TableWritesMark, deliveries: number, minStateUpdates: number) {
  const walBytes = Number(
    (await sql<{ bytes: string }>`select pg_wal_lsn_diff(pg_current_wal_lsn(), ${before.lsn}::pg_lsn)::text as bytes`.execute(admin)).rows[0]!.bytes,
  )
  const deadline = performance.now() + 12_000
  let now = await tableWritesMarkNow(admin)
  while ((now.tables['delivery_states']?.updates ?? 0) - (before.tables['delivery_states']?.updates ?? 0) < minStateUpdates && performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250))
    now = await tableWritesMarkNow(admin)
  }
  const tables = Object.fromEntries(
    TABLES.filter((t) => now.tables[t]).map((t) => {
      const updates = now.tables[t]!.updates - (before.tables[t]?.updates ?? 0)
      const hot = now.tables[t]!.hot - (before.tables[t]?.hot ?? 0)
      const inserts = now.tables[t]!.inserts - (before.tables[t]?.inserts ?? 0)
      return [
        t,
        {
          inserts_per_delivery: round(inserts / deliveries, 2),
          updates_per_delivery: round(updates / deliveries, 2),
          hot_ratio: updates === 0 ? null : round(hot / updates, 3),
          index_entries_per_delivery: round(((inserts + updates - hot) * now.tables[t]!.indexes) / deliveries, 2),
        },
      ]
    }),
  )
  const ledger = tables['ledger']
  if (ledger) ledger.index_entries_per_delivery = round((await ledgerIndexEntries(admin, before.position)) / deliveries, 2)
  const sum = (f: (t: { inserts_per_delivery: number; updates_per_delivery: number; index_entries_per_delivery: number }) => number) =>
    round(Object.values(tables).reduce((a, t) => a + f(t), 0), 2)
  return {
    wal_bytes_per_delivery: Math.round(walBytes / deliveries),
    heap_tuples_per_delivery: sum((t) => t.inserts_per_delivery + t.updates_per_delivery),
    index_entries_per_delivery: sum((t) => t.index_entries_per_delivery),
    tables,
  }
}
