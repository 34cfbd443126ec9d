/**
 * Delivery retention at scale, outside the tests:
 *
 *     npx tsx --conditions=source scripts/bench-retention.ts [--deliveries=100000] [--url=postgres://…/postgres]
 *
 * Starts an embedded PostgreSQL (or uses `--url`'s server), writes a synthetic history of that
 * many completed deliveries (testkit's, dated 2030-01-01), retires them all as the maintenance
 * pass would (batches of 1,000, one `deliveries.retired` entry each), then replays. Prints one
 * JSON line: retired rows/s, ms per batch (median, max), the table's size before and after,
 * and the replay's time and differences.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { sql } from 'kysely'
import pg from 'pg'
import { createDb, deliveryRetire, migrateToLatest, type Db } from '@hookledger/store'
import { ledgerReplayVerify } from '@hookledger/ledger'
import { openEmbeddedDatabase } from '@hookledger/embedded'
import { syntheticLedgerHistory } from '@hookledger/testkit/synthetic-ledger-history'

const tableBytes = async (db: Db) =>
  Number((await sql<{ n: string }>`select pg_total_relation_size('deliveries')::text as n`.execute(db)).rows[0]!.n)

async function main(): Promise<void> {
  const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3)
  const deliveries = Number(arg('deliveries') ?? 100_000)
  let dataDir: string | null = null
  let stop = async () => {}
  let serverUrl = arg('url')
  if (!serverUrl) {
    dataDir = mkdtempSync(path.join(tmpdir(), 'hookledger-retention-bench-'))
    const embedded = await openEmbeddedDatabase({ dataDir, settings: { max_connections: '20', log_min_messages: 'warning' } })
    serverUrl = embedded.url('postgres')
    stop = () => embedded.stop()
  }
  const name = 'retention_bench'
  try {
    const admin = new pg.Client({ connectionString: serverUrl })
    await admin.connect()
    await admin.query(`drop database if exists ${name}`)
    await admin.query(`create database ${name}`)
    await admin.end()
    const db = createDb(new pg.Pool({ connectionString: Object.assign(new URL(serverUrl), { pathname: `/${name}` }).toString(), max: 2 }))
    await migrateToLatest(db)
    await syntheticLedgerHistory(db, { deliveries, endpoints: Math.max(10, Math.round(deliveries / 200)) })
    await sql`vacuum analyze deliveries`.execute(db)
    const before = await tableBytes(db)
    const now = new Date('2030-03-01T00:00:00Z')
    const batchMs: number[] = []
    let retired = 0
    const started = performance.now()
    for (;;) {
      const t = performance.now()
      const r = await deliveryRetire(db, { now, retentionDays: 30, actor: 'system', maxBatches: 1 })
      if (r.retired === 0) break
      batchMs.push(performance.now() - t)
      retired += r.retired
    }
    const retireMs = performance.now() - started
    await sql`vacuum analyze deliveries`.execute(db)
    const after = await tableBytes(db)
    const replay = await ledgerReplayVerify(db)
    const plan = (
      await sql<{ 'QUERY PLAN': string }>`explain select position, delivery_id from ledger where delivery_id is not null
        union all select l.position, r.id::uuid from ledger l cross join lateral jsonb_array_elements_text(l.payload -> 'delivery_ids') r(id)
        where l.kind = 'deliveries.retired' order by 2, 1`.execute(db)
    ).rows.map((r) => r['QUERY PLAN'])
    await db.destroy()
    batchMs.sort((a, b) => a - b)
    process.stdout.write(
      JSON.stringify({
        deliveries,
        retired,
        batches: batchMs.length,
        retired_per_sec: Math.round((retired / retireMs) * 1000),
        batch_ms_median: Math.round(batchMs[Math.floor(batchMs.length / 2)] ?? 0),
        batch_ms_max: Math.round(batchMs.at(-1) ?? 0),
        deliveries_bytes_before: before,
        deliveries_bytes_after_vacuum: after,
        replay_ms: replay.ms,
        replay_rows: replay.ledgerRows,
        replay_differences: replay.differencesTotal,
        replay_delivery_plan: plan.slice(0, 6),
      }) + '\n',
    )
  } finally {
    await stop()
    if (dataDir) rmSync(dataDir, { recursive: true, force: true })
  }
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
