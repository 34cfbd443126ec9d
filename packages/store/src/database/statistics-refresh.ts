import { sql } from 'kysely'
import type { Db } from './database.js'

/**
 * Rows a table grew or shrank by, against what the planner believes, below which it is never
 * analyzed here (autovacuum's).
 * Small enough that a new installation's first plans, made on empty tables, go after its first
 * thousand deliveries (a small write keeps the write function's plans until an analyze: ledger-write.ts `writePlanMode`);
 * with the fifth-of-the-rows rule a table growing to a million rows is analyzed ~35 times here.
 */
export const STATISTICS_REFRESH_MIN_CHANGES = 1_000

/**
 * Analyzes the hot tables whose statistics a burst left behind (migrations 0012, 0016): whose
 * live rows differ from what the planner believes by at least `minChanges` and by more than a
 * fifth (a drain's updates, which leave a table's size as it was, do not count). A new plan
 * follows for every statement of the write function that reads them. Names the tables.
 */
export async function statisticsRefresh(db: Db, minChanges = STATISTICS_REFRESH_MIN_CHANGES): Promise<string[]> {
  const row = (await sql<{ tables: string[] }>`select hookledger_statistics_refresh(${minChanges}::bigint) as tables`.execute(db)).rows[0]
  return row?.tables ?? []
}
