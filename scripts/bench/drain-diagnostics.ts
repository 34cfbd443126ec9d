/**
 * Drain diagnostics: where one endpoint's cycle goes (from the ledger), and on request the
 * drain's top statements (`--stats`, pg_stat_statements) and a CPU profile (`--profile`).
 */
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { sql } from 'kysely'
import type { Db } from '@hookledger/store'
import { PROFILE, RESULTS_DIR, STATS } from './settings.js'
import { log, round } from './util.js'

/**
 * The ledger rows that complete a delivery, in either ledger format (1: `delivery.completed`;
 * 2: the 2xx attempt itself, `completes`), for the rows aliased `alias` (or unaliased).
 */
export const isCompletion = (alias = '') => {
  const c = alias ? `${alias}.` : ''
  return sql.raw(`(${c}kind = 'delivery.completed' or (${c}kind = 'delivery.attempted' and ${c}payload ? 'completes'))`)
}

/**
 * Where one endpoint's cycle goes, from the ledger (medians, ms): claim → POST start (the claim
 * transaction and the launch), the POST, POST end → settle (batching), settle → the endpoint's
 * next claim (the settle transaction and the producer's next pass).
 */
export async function cycleBreakdown(db: Db): Promise<Record<string, number>> {
  const r = (
    await sql<Record<string, number>>`
      with c as (
        select l.delivery_id, l.endpoint_id,
          max(l.occurred_at) filter (where l.kind = 'delivery.claimed') as claimed,
          max((l.payload->>'started_at')::timestamptz) filter (where l.kind = 'delivery.attempted') as started,
          max((l.payload->>'duration_ms')::int) filter (where l.kind = 'delivery.attempted') as post_ms,
          max(l.occurred_at) filter (where ${isCompletion('l')}) as settled
        from ledger l where l.delivery_id is not null group by l.delivery_id, l.endpoint_id
      ), n as (
        select *, lead(claimed) over (partition by endpoint_id order by claimed) as next_claimed from c
      )
      select
        percentile_cont(0.5) within group (order by extract(epoch from started - claimed) * 1000) as claim_to_post,
        percentile_cont(0.5) within group (order by post_ms) as post,
        percentile_cont(0.5) within group (order by extract(epoch from settled - started) * 1000 - post_ms) as post_to_settle,
        percentile_cont(0.5) within group (order by extract(epoch from next_claimed - settled) * 1000) as settle_to_next_claim,
        percentile_cont(0.5) within group (order by extract(epoch from next_claimed - claimed) * 1000) as cycle,
        (select percentile_cont(0.5) within group (order by ms) from (
          select extract(epoch from min(started) - claimed) * 1000 as ms from c group by claimed
        ) b) as claim_tx
      from n
    `.execute(db)
  ).rows[0]!
  return Object.fromEntries(Object.entries(r).map(([k, v]) => [k, round(Number(v), 1)]))
}

/** Deliveries completed per second over the drain, in `bucketMs` buckets from its first claim: [seconds, per second]. */
export async function drainTimeline(db: Db, bucketMs = 250): Promise<[number, number][]> {
  const rows = (
    await sql<{ t: number; n: number }>`
      with done as (
        select occurred_at from ledger
        where ${isCompletion()}
      ), start as (select min(occurred_at) as t0 from ledger where kind = 'delivery.claimed')
      select floor(extract(epoch from d.occurred_at - s.t0) * 1000 / ${bucketMs})::int as t, count(*)::int as n
      from done d, start s group by 1 order by 1
    `.execute(db)
  ).rows
  return rows.map((r) => [round(((r.t + 1) * bucketMs) / 1000, 2), Math.round((r.n * 1000) / bucketMs)])
}

export async function resetStatements(db: Db): Promise<void> {
  await sql`create extension if not exists pg_stat_statements`.execute(db)
  await sql`select pg_stat_statements_reset()`.execute(db)
}

/** Logs the 25 statements of this database that took the most time since the reset. */
export async function topStatements(db: Db): Promise<void> {
  const top = (
    await sql<{ calls: string; total_ms: number; mean_ms: number; plan_ms: number; rows: string; query: string }>`
      select calls, round(total_exec_time::numeric, 1)::float8 as total_ms, round(mean_exec_time::numeric, 3)::float8 as mean_ms,
             round((total_plan_time / greatest(calls, 1))::numeric, 3)::float8 as plan_ms,
             rows, regexp_replace(left(query, 110), '[[:space:]]+', ' ', 'g') as query
      from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())
      order by total_exec_time desc limit 25
    `.execute(db)
  ).rows
  for (const r of top) {
    log(
      `${String(r.calls).padStart(6)} ${String(r.total_ms).padStart(9)} ms ${String(r.mean_ms).padStart(7)} ms/call exec ${String(r.plan_ms).padStart(7)} ms/call plan  ${r.query}`,
    )
  }
}

/** A CPU profile of this process until `stop(file)`. */
export async function startProfile(): Promise<{ stop(file: string): Promise<void> }> {
  const { Session } = await import('node:inspector/promises')
  const session = new Session()
  session.connect()
  await session.post('Profiler.enable')
  await session.post('Profiler.start')
  return {
    async stop(file) {
      const { profile } = await session.post('Profiler.stop')
      writeFileSync(file, JSON.stringify(profile))
      session.disconnect()
    },
  }
}

/**
 * `--stats` and `--profile` around one phase of a scenario: from here to `stop()`, the database's
 * top statements (logged) and this process's CPU profile (bench-results/<profileName>.cpuprofile).
 */
export async function phaseDiagnostics(admin: Db, profileName: string): Promise<{ stop(): Promise<void> }> {
  if (STATS) await resetStatements(admin)
  const profile = PROFILE ? await startProfile() : null
  return {
    async stop() {
      await profile?.stop(path.join(RESULTS_DIR, `${profileName}.cpuprofile`))
      if (STATS) await topStatements(admin)
    },
  }
}
