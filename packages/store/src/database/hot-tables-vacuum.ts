import { sql } from 'kysely'
import type { Db } from './database.js'

/**
 * The tables whose few rows the claims and settles keep rewriting: `endpoints` (the lease, every
 * claim and settle; HOT mostly) and `endpoint_queue` (one row per endpoint; never a HOT update, its
 * `ready_at` is indexed; since migration 0019 once in 2 s while an endpoint sends a backlog, where
 * it was once a delivery). Autovacuum visits a database at most once per `autovacuum_naptime` (a minute by
 * default), and at a thousand deliveries a second that is ~60,000 dead versions of a hundred
 * rows between visits: the tables and their indexes bloat to megabytes and stay there (the
 * hour-long soak: endpoint_queue 5.6 → 10 MB, endpoints 0.5 → 4.2 MB for 100 rows).
 */
export const HOT_TABLES = ['endpoint_queue', 'endpoints'] as const

/** Dead versions a hot table may hold before maintenance vacuums it (and more than its live rows). */
export const HOT_TABLE_DEAD_TUPLES = 1_000

/**
 * Vacuums each hot table with more than `minDead` dead versions and more dead than
 * live ones (`skip_locked`: one that another vacuum holds is left to it). The service role may
 * (PostgreSQL 17+ grants it MAINTAIN on these tables, database-roles.ts); on an older server it
 * may not, and the answer is `unpermitted`: autovacuum alone then looks after them. VACUUM
 * cannot run in a transaction, so each is its own statement on a pool connection.
 */
export async function hotTablesVacuum(db: Db, minDead = HOT_TABLE_DEAD_TUPLES): Promise<{ vacuumed: string[]; unpermitted: boolean }> {
  // VACUUM without the privilege only warns and skips, so ask first (MAINTAIN exists from 17 on).
  const rows = (
    await sql<{ relname: string; dead: boolean; may: boolean }>`
      select relname, n_dead_tup > greatest(${minDead}::bigint, n_live_tup) as dead,
        case when current_setting('server_version_num')::int >= 170000 then has_table_privilege(relid, 'MAINTAIN') else false end as may
      from pg_stat_user_tables
      where schemaname = current_schema() and relname = any(${[...HOT_TABLES]}::text[])
      order by relname
    `.execute(db)
  ).rows
  if (rows.some((r) => !r.may)) return { vacuumed: [], unpermitted: true }
  const vacuumed: string[] = []
  for (const { relname } of rows.filter((r) => r.dead)) {
    await sql`vacuum (skip_locked) ${sql.id(relname)}`.execute(db)
    vacuumed.push(relname)
  }
  return { vacuumed, unpermitted: false }
}
