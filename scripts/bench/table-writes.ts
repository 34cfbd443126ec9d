/**
 * What a drain writes, from PostgreSQL's own counters: WAL bytes (the LSN before and after), and
 * per table the rows updated and how many of those updates were HOT (heap-only: no new index
 * entry, the new version on the same page).
 */
import { sql } from 'kysely'
import type { Db } from '@hookledger/store'
import { round } from './util.js'

const TABLES = ['delivery_states', 'delivery_origins', 'endpoints', 'endpoint_queue']

export interface TableWritesMark {
  readonly lsn: string
  readonly tables: Record<string, { updates: number; hot: number; inserts: number }>
}

export async function tableWritesMark(admin: Db): Promise<TableWritesMark> {
  const lsn = (await sql<{ lsn: string }>`select pg_current_wal_lsn()::text as lsn`.execute(admin)).rows[0]!.lsn
  const rows = (
    await sql<{ relname: string; upd: string; hot: string; ins: string }>`
      select relname, n_tup_upd::text as upd, n_tup_hot_upd::text as hot, n_tup_ins::text as ins
      from pg_stat_user_tables where schemaname = current_schema() and relname = any(${TABLES}::text[])
    `.execute(admin)
  ).rows
  return { lsn, tables: Object.fromEntries(rows.map((r) => [r.relname, { updates: Number(r.upd), hot: Number(r.hot), inserts: Number(r.ins) }])) }
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
  let now = await tableWritesMark(admin)
  while ((now.tables['delivery_states']?.updates ?? 0) - (before.tables['delivery_states']?.updates ?? 0) < minStateUpdates && performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250))
    now = await tableWritesMark(admin)
  }
  const tables = Object.fromEntries(
    TABLES.filter((t) => now.tables[t]).map((t) => {
      const updates = now.tables[t]!.updates - (before.tables[t]?.updates ?? 0)
      const hot = now.tables[t]!.hot - (before.tables[t]?.hot ?? 0)
      return [t, { updates_per_delivery: round(updates / deliveries, 2), hot_ratio: updates === 0 ? null : round(hot / updates, 3) }]
    }),
  )
  return { wal_bytes_per_delivery: Math.round(walBytes / deliveries), tables }
}
