/**
 * Scenario `history`: months of traffic already behind the service — 1,000,000 completed
 * deliveries (quick: 20,000) with their full ledger (~4.3 rows each), written straight in SQL by
 * the testkit's syntheticLedgerHistory over 100 endpoints (driving the engine that far would
 * take the whole run). Then, with due work enqueued through the real publish and fan-out path:
 * the claim's median, one delivery's attempt history (`attemptList`, what
 * `GET …/deliveries/:id/attempts` reads; target < 10 ms) and the disk per delivery. Then the
 * ledger's lifecycle over it (history-lifecycle.ts): snapshot, verify from it beside a full
 * verify, archive and drop.
 */
import { createHash } from 'node:crypto'
import { sql } from 'kysely'
import { attemptList } from '@hookledger/store'
import { ledgerPartitions, ledgerPartitionsAhead } from '@hookledger/ledger'
// The history generator alone: the testkit index needs a running vitest.
import { syntheticLedgerHistory } from '@hookledger/testkit/synthetic-ledger-history'
import { ClaimProbe } from './claim-probe.js'
import { freshDatabase, type ScenarioContext, type ScenarioOutput } from './harness.js'
import { ledgerLifecycle } from './history-lifecycle.js'
import { cfg, QUICK, targets } from './settings.js'
import { percentile, round } from './util.js'

/** The owner and delivery ids syntheticLedgerHistory writes. */
const SYN_OWNER = 'syn'
const synDeliveryId = (i: number) => {
  const h = createHash('md5').update(`delivery-${i}`).digest('hex')
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
}

export async function historyScenario({ env, progress }: ScenarioContext): Promise<ScenarioOutput> {
  const bdb = await freshDatabase(env, 'bench_history', 2)
  const { db } = bdb
  const n = cfg.historyDeliveries
  const endpoints = cfg.claimEndpoints
  try {
    // Partitions ahead of the whole history, as maintenance would have made them over the months:
    // small enough for the 4.3M-row history to span several (the default, 50M, would hold it all
    // in one, leaving the archive nothing whole to drop), and after the migration's pre-made pair
    // of default ones, which the history would otherwise fill first (the full run's archive then
    // dropped nothing).
    const rowsPerPartition = QUICK ? 20_000 : 1_000_000
    const last = (await ledgerPartitions(db)).filter((p) => !p.isDefault).at(-1)!
    await sql`alter table ledger alter column position restart with ${sql.lit(Number(last.to))}`.execute(bdb.admin)
    await ledgerPartitionsAhead(db, { rowsPerPartition, ahead: Math.ceil((n * 4.5) / rowsPerPartition) + 2 })
    progress.phase(`seeding ${n.toLocaleString('en')} completed deliveries (ledger + projection) in SQL`)
    const t = performance.now()
    await syntheticLedgerHistory(bdb.admin, { deliveries: n, endpoints })
    const seedMs = performance.now() - t

    const sizes = (
      await sql<{ relname: string; bytes: string }>`
        select c.relname,
          case when c.relkind = 'p' then (select sum(pg_total_relation_size(t.relid)) from pg_partition_tree(c.oid) t where t.isleaf)
               else pg_total_relation_size(c.oid) end as bytes
        from pg_class c
        join pg_namespace s on s.oid = c.relnamespace and s.nspname = current_schema()
        where c.relkind in ('r', 'p') and c.relname in ('ledger', 'deliveries', 'events', 'endpoints')
      `.execute(db)
    ).rows
    const byTable = Object.fromEntries(sizes.map((s) => [s.relname, Number(s.bytes)]))
    const totalBytes = Object.values(byTable).reduce((a, b) => a + b, 0)
    const ledgerRows = Number((await sql<{ n: string }>`select count(*) as n from ledger`.execute(db)).rows[0]!.n)

    progress.phase(`${cfg.historyLookups} attempt histories`)
    const lookups: number[] = []
    for (let k = 0; k < cfg.historyLookups; k++) {
      const id = synDeliveryId(1 + Math.floor(Math.random() * n))
      const t0 = performance.now()
      const { attempts } = await attemptList(db, SYN_OWNER, id)
      lookups.push(performance.now() - t0)
      if (attempts.length === 0) throw new Error(`no attempts for delivery ${id}`)
    }
    lookups.sort((a, b) => a - b)
    const lookupMedian = percentile(lookups, 50)

    progress.phase('claiming beside the history')
    const probe = new ClaimProbe(db)
    await probe.enqueue(env, SYN_OWNER, cfg.claimRuns + 2)
    const claim = await probe.measure(cfg.claimRuns, Math.min(cfg.claimLimit, endpoints))
    const perDelivery = totalBytes / n
    const lifecycle = await ledgerLifecycle(db, env, progress, SYN_OWNER)
    return {
      metrics: {
        completed_deliveries: n,
        endpoints,
        ledger_rows: ledgerRows,
        seed_ms: Math.round(seedMs),
        bytes_by_table: byTable,
        bytes_per_delivery: Math.round(perDelivery),
        attempt_history_ms: { p50: round(lookupMedian, 2), p99: round(percentile(lookups, 99), 2), max: round(lookups.at(-1)!, 2) },
        claim_median_ms: claim.medianMs,
        claim_runs_ms: claim.runs,
        lifecycle: lifecycle.metrics,
      },
      rows: [
        { metric: `claim ${cfg.claimLimit} beside ${n.toLocaleString('en')} completed (median ms)`, value: claim.medianMs.toFixed(2), target: '—', pass: null },
        {
          metric: `one delivery's attempt history @ ${n.toLocaleString('en')} (median ms)`,
          value: lookupMedian.toFixed(2),
          target: `< ${targets.attemptHistoryMs}`,
          pass: lookupMedian < targets.attemptHistoryMs,
        },
        { metric: 'disk bytes per delivery in history (ledger+projections+indexes)', value: String(Math.round(perDelivery)), target: '—', pass: null },
        ...lifecycle.rows,
      ],
    }
  } finally {
    await bdb.close()
  }
}
