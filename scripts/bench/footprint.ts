/**
 * Scenario `footprint`: bytes per completed delivery after the drain (ledger, projections and
 * their indexes, and the claim's queue heads), by table, relation and ledger kind; ledger rows
 * per delivery.
 */
import { sql } from 'kysely'
import type { ScenarioOutput } from './harness.js'
import { targets } from './settings.js'
import { shared } from './shared.js'
import { round } from './util.js'

export async function footprintScenario(): Promise<ScenarioOutput> {
  const bdb = shared.drain
  if (!bdb) throw new Error('needs the drain scenario')
  const { db } = bdb
  const sizes = (
    await sql<{ relname: string; bytes: string; heap: string }>`
      -- The ledger is range-partitioned (the baseline migration): its size is its partitions'.
      select c.relname,
        case when c.relkind = 'p' then (select sum(pg_total_relation_size(t.relid)) from pg_partition_tree(c.oid) t where t.isleaf)
             else pg_total_relation_size(c.oid) end as bytes,
        case when c.relkind = 'p' then (select sum(pg_relation_size(t.relid)) from pg_partition_tree(c.oid) t where t.isleaf)
             else pg_relation_size(c.oid) end as heap
      from pg_class c
      -- A delivery is two tables (migration 0002): what it is, and where it stands. The claim's
      -- queue heads are on the disk too: one row an endpoint, but every rewrite of one leaves a
      -- dead version until vacuum (about 110 B a delivery before 0019 put leased heads on a grid).
      where c.relname in ('ledger', 'delivery_origins', 'delivery_states', 'events', 'endpoints', 'endpoint_queue')
        and c.relkind in ('r', 'p')
    `.execute(db)
  ).rows
  const counts = (
    await sql<{ completed: string; ledger: string; ledger_delivery: string }>`
      select (select count(*) from deliveries where state = 'completed') as completed,
             (select count(*) from ledger) as ledger,
             (select count(*) from ledger where delivery_id is not null) as ledger_delivery
    `.execute(db)
  ).rows[0]!
  const completed = Number(counts.completed)
  if (completed === 0) throw new Error('no completed deliveries to measure')
  const byTable = Object.fromEntries(sizes.map((s) => [s.relname, Number(s.bytes)]))
  const byRelation = Object.fromEntries(
    (
      await sql<{ relname: string; bytes: string }>`
        select c.relname, pg_relation_size(c.oid) as bytes from pg_class c
        join pg_namespace n on n.oid = c.relnamespace and n.nspname = current_schema()
        where c.relkind in ('r', 'i') and c.relname not like 'schema_migration%' order by 2 desc
      `.execute(db)
    ).rows.map((r) => [r.relname, Number(r.bytes)]),
  )
  const payloadByKind = Object.fromEntries(
    (
      await sql<{ kind: string; n: string; row_bytes: number; payload_bytes: number }>`
        select kind, count(*) as n, round(avg(pg_column_size(l.*)))::int as row_bytes,
               round(avg(pg_column_size(payload)))::int as payload_bytes
        from ledger l group by kind order by count(*) desc
      `.execute(db)
    ).rows.map((r) => [
      r.kind,
      { rows: Number(r.n), row_bytes: r.row_bytes, payload_bytes: r.payload_bytes },
    ]),
  )
  const total = Object.values(byTable).reduce((a, b) => a + b, 0)
  const perDelivery = total / completed
  const ledgerPerDelivery = Number(counts.ledger) / completed
  return {
    metrics: {
      completed,
      total_bytes: total,
      bytes_by_table: byTable,
      bytes_by_relation: byRelation,
      ledger_by_kind: payloadByKind,
      bytes_per_completed_delivery: Math.round(perDelivery),
      ledger_rows: Number(counts.ledger),
      ledger_rows_per_delivery: round(ledgerPerDelivery, 2),
      delivery_ledger_rows_per_delivery: round(Number(counts.ledger_delivery) / completed, 2),
    },
    rows: [
      {
        metric: 'bytes per completed delivery (ledger+projections+indexes)',
        value: String(Math.round(perDelivery)),
        target: `≤ ${targets.footprintBytes}`,
        pass: perDelivery <= targets.footprintBytes,
      },
      {
        metric: 'ledger rows per delivery',
        value: round(ledgerPerDelivery, 2).toFixed(2),
        target: '—',
        pass: null,
      },
    ],
  }
}
