/**
 * Replay-verify at scale, outside the tests.
 *
 * - `npm run bench -- --replay-phases`: `replayPhases(db)` prints where a replay of the drain's
 *   ledger spends its time (each table's stream, the final count).
 * - Standalone, on a synthetic ledger as big as asked:
 *
 *     npx tsx --conditions=source scripts/bench-replay-phases.ts [--deliveries=200000] [--endpoints=N]
 *         [--url=postgres://…/postgres] [--database=NAME] [--reuse]
 *
 *   starts an embedded PostgreSQL (or uses the server at `--url`), writes a consistent history
 *   of that many deliveries straight in SQL (every one enqueued, claimed, attempted, completed;
 *   every tenth after a 500 and a retry: ~4.3 ledger rows each), replays it, and prints one JSON
 *   line: ledger rows, rows/s, the process's peak RSS during the replay, the replay's own
 *   memory counters and phases. `--reuse` replays `--database` as it is (no generation).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { sql, type RawBuilder } from 'kysely'
import pg from 'pg'
import { createDb, ledgerReplayVerify, migrateToLatest, openEmbeddedDatabase, type Db } from '@hookledger/store'

/** The phases of one replay-verify, in ms (see `ReplayReport.phaseMs`). */
export async function replayPhases(db: Db): Promise<Record<string, number>> {
  const report = await ledgerReplayVerify(db)
  return { ...report.phaseMs, total: report.ms }
}

/**
 * A consistent synthetic history (the same as packages/worker/src/ledger-replay-scale.int.spec.ts
 * writes): entries appended phase by phase, so one delivery's entries lie far apart in the
 * ledger as in a real one; the live rows are what the fold gives.
 */
export async function syntheticHistory(db: Db, deliveries: number, endpoints: number): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await sql`set local session_replication_role = replica`.execute(trx)
    const iso = (t: RawBuilder<unknown>) => sql`to_char((${t}) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
    await sql`
      create temp table syn_ep on commit drop as
      select j, md5('endpoint-' || j)::uuid as id, decode(md5('secret-' || j), 'hex') as sealed,
             '2030-01-01T00:00:00Z'::timestamptz + (j || ' ms')::interval as at
      from generate_series(0, ${endpoints - 1}) j
    `.execute(trx)
    await sql`
      create temp table syn_d on commit drop as
      select i, md5('delivery-' || i)::uuid as id, md5('endpoint-' || (i % ${endpoints}))::uuid as endpoint_id,
             'evt_' || i as event_id, '2030-01-01T01:00:00Z'::timestamptz + (i * 10 || ' ms')::interval as enq,
             (i % 10 = 0) as retried
      from generate_series(1, ${deliveries}) i
    `.execute(trx)
    await sql`
      insert into ledger (occurred_at, owner_id, kind, endpoint_id, payload, actor)
      select at, 'syn', 'endpoint.created', id,
        jsonb_build_object('url', 'https://example.test/' || j, 'description', '', 'event_types', jsonb_build_array('*'),
          'embed_id', null, 'secret_sealed', encode(sealed, 'base64'), 'secret_key_id', 'key_' || j), 'owner:syn'
      from syn_ep order by j
    `.execute(trx)
    await sql`
      insert into endpoints
      select id, 'syn', 'https://example.test/' || j, '', '{*}', null, sealed, 'key_' || j, null, null, null,
        true, null, null, null, null, null, at, at
      from syn_ep
    `.execute(trx)
    const append = (kind: string, at: RawBuilder<unknown>, payload: RawBuilder<unknown>, where: RawBuilder<unknown>) => sql`
      insert into ledger (occurred_at, owner_id, kind, endpoint_id, delivery_id, event_id, payload, actor)
      select ${at}, 'syn', ${kind}, endpoint_id, id, event_id, ${payload}, 'worker:syn' from syn_d where ${where} order by i
    `
    const attempted = (at: RawBuilder<unknown>, no: number, status: number, outcome: string) =>
      sql`jsonb_build_object('attempt', ${no}::int, 'counted', true, 'run', 1, 'started_at', ${iso(at)}, 'duration_ms', 40,
        'status_code', ${status}::int, 'error', ${status === 500 ? 'HTTP 500' : null}::text, 'outcome', ${outcome}::text,
        'signed_with', jsonb_build_array('key'))`
    const claimed = (at: RawBuilder<unknown>) => sql`jsonb_build_object('worker', 'worker:syn', 'lease_until', ${iso(sql`${at} + interval '15 s'`)})`
    const t = (ms: number) => sql`enq + ${`${ms} ms`}::interval`
    await append('delivery.enqueued', sql`enq`, sql`jsonb_build_object('event_type', 'booking.created', 'next_attempt_at', ${iso(sql`enq`)}, 'cool_down', false)`, sql`true`).execute(trx)
    await append('delivery.claimed', t(1000), claimed(t(1000)), sql`true`).execute(trx)
    for (const [retried, status, outcome] of [[false, 200, 'completed'], [true, 500, 'retry_scheduled']] as const) {
      await sql`
        insert into ledger (occurred_at, owner_id, kind, endpoint_id, delivery_id, event_id, payload, actor)
        select ${t(1100)}, 'syn', k.kind, endpoint_id, id, event_id, k.payload, 'worker:syn'
        from syn_d cross join lateral (values
          (1, 'delivery.attempted', ${attempted(t(1100), 1, status, outcome)}),
          (2, ${outcome === 'completed' ? 'delivery.completed' : 'delivery.retry_scheduled'}::text,
            ${outcome === 'completed' ? sql`'{}'::jsonb` : sql`jsonb_build_object('next_attempt_at', ${iso(t(6100))}, 'backoff_ms', 5000)`})
        ) k(o, kind, payload)
        where retried = ${retried} order by i, k.o
      `.execute(trx)
    }
    await append('delivery.claimed', t(7000), claimed(t(7000)), sql`retried`).execute(trx)
    await sql`
      insert into ledger (occurred_at, owner_id, kind, endpoint_id, delivery_id, event_id, payload, actor)
      select ${t(7100)}, 'syn', k.kind, endpoint_id, id, event_id, k.payload, 'worker:syn'
      from syn_d cross join lateral (values (1, 'delivery.attempted', ${attempted(t(7100), 2, 200, 'completed')}), (2, 'delivery.completed', '{}'::jsonb)) k(o, kind, payload)
      where retried order by i, k.o
    `.execute(trx)
    await sql`
      insert into deliveries
      select id, 'syn', endpoint_id, event_id, 'booking.created', 'completed', 1, enq, case when retried then 2 else 1 end,
        null, null, null, 200, null, enq, case when retried then ${t(7100)} else ${t(1100)} end
      from syn_d
    `.execute(trx)
  })
  for (const table of ['ledger', 'deliveries', 'endpoints']) await sql`vacuum analyze ${sql.ref(table)}`.execute(db)
}

async function main(): Promise<void> {
  const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3)
  const deliveries = Number(arg('deliveries') ?? 200_000)
  const endpoints = Number(arg('endpoints') ?? Math.max(10, Math.round(deliveries / 200)))
  const name = arg('database') ?? 'replay_bench'
  const reuse = process.argv.includes('--reuse')
  let dataDir: string | null = null
  let stop = async () => {}
  let serverUrl = arg('url')
  if (!serverUrl) {
    dataDir = mkdtempSync(path.join(tmpdir(), 'hookledger-replay-bench-'))
    const embedded = await openEmbeddedDatabase({ dataDir, settings: { max_connections: '20', log_min_messages: 'warning' } })
    serverUrl = embedded.url('postgres')
    stop = () => embedded.stop()
  }
  try {
    if (!reuse) {
      const admin = new pg.Client({ connectionString: serverUrl })
      await admin.connect()
      await admin.query(`drop database if exists ${name}`)
      await admin.query(`create database ${name}`)
      await admin.end()
    }
    const db = createDb(new pg.Pool({ connectionString: Object.assign(new URL(serverUrl), { pathname: `/${name}` }).toString(), max: 2 }))
    let generateMs = 0
    if (!reuse) {
      await migrateToLatest(db)
      const t = performance.now()
      await syntheticHistory(db, deliveries, endpoints)
      generateMs = Math.round(performance.now() - t)
    }
    const rssBefore = process.memoryUsage().rss
    let peak = rssBefore
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20)
    const started = performance.now()
    const report = await ledgerReplayVerify(db)
    const ms = performance.now() - started
    clearInterval(sampler)
    peak = Math.max(peak, process.memoryUsage().rss)
    await db.destroy()
    const mb = (b: number) => Math.round(b / 1048576)
    const r = report as Partial<typeof report> & typeof report
    process.stdout.write(
      JSON.stringify({
        ledger_rows: r.ledgerRows,
        deliveries: r.deliveries,
        endpoints: r.endpoints,
        differences: r.differencesTotal ?? r.differences.length,
        ms: Math.round(ms),
        rows_per_sec: Math.round((r.ledgerRows / ms) * 1000),
        rss_before_mb: mb(rssBefore),
        peak_rss_mb: mb(peak),
        peak_held: r.peakHeld,
        peak_buffered_rows: r.peakBufferedRows,
        phase_ms: r.phaseMs,
        generate_ms: generateMs,
      }) + '\n',
    )
  } finally {
    await stop()
    if (dataDir) rmSync(dataDir, { recursive: true, force: true })
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err) => {
    console.error(err)
    process.exit(1)
  })
}
