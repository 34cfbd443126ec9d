/**
 * Scenario `fanout-wide`: one event of one owner to 10,000 endpoints (created in bulk with
 * their ledger entries): publish → the fan-out transaction committed (its deliveries and the
 * one `fanout.decided` entry that enqueues them all), by `fanoutRun` as the dispatcher calls it.
 * Nothing drains them (draining 10,000 endpoints' deliveries is the claim's business, measured
 * in claim-endpoints); the run ends with a replay-verify, which also checks the bulk endpoints.
 */
import { sql } from 'kysely'
import { fanoutRun } from '@hookledger/store'
import { bulkCreateEndpoints, eventId, publish, replayClean } from './fixtures.js'
import { freshDatabase, type ScenarioContext, type ScenarioOutput } from './harness.js'
import { OWNER, STATS, cfg, targets } from './settings.js'
import { resetStatements, topStatements } from './drain-diagnostics.js'
import { median, round } from './util.js'

export async function fanoutWideScenario({ env, progress }: ScenarioContext): Promise<ScenarioOutput> {
  const bdb = await freshDatabase(env, 'bench_fanout_wide')
  const { db } = bdb
  const n = cfg.fanoutWideEndpoints
  try {
    progress.phase(`creating ${n.toLocaleString('en')} endpoints in SQL`)
    await bulkCreateEndpoints(env, bdb.admin, { count: n, owner: OWNER, url: env.receiver.url('/wide') })
    // Statistics as a running system has them (autovacuum would analyze the new rows within a
    // minute, sooner or later in the run depending on how many databases it cycles through).
    await sql`analyze`.execute(bdb.admin)
    const runs: number[] = []
    if (STATS) await resetStatements(bdb.admin)
    progress.phase(`${cfg.fanoutRuns} fan-outs of one event to ${n.toLocaleString('en')} endpoints`)
    for (let r = 0; r < cfg.fanoutRuns; r++) {
      const id = eventId()
      const t0 = performance.now()
      await publish(db, OWNER, id)
      const fan = await fanoutRun(db, { now: new Date(), catalog: env.catalog, embedAdmits: async () => false, actor: 'worker:bench' })
      runs.push(round(performance.now() - t0, 1))
      const count = Number((await sql<{ n: string }>`select count(*) as n from deliveries where event_id = ${id}`.execute(db)).rows[0]!.n)
      if (fan.enqueued !== n || count !== n) throw new Error(`fan-out of ${id} enqueued ${fan.enqueued} (${count} rows), expected ${n}`)
    }
    if (STATS) await topStatements(bdb.admin)
    progress.phase('replay-verify')
    const replay = await replayClean(db, 'fan-out wide')
    const med = median(runs)
    return {
      metrics: { endpoints: n, runs_ms: runs, median_ms: med, max_ms: Math.max(...runs), replay_differences: replay.differencesTotal },
      rows: [
        {
          metric: `fan-out 1 event → ${n.toLocaleString('en')} deliveries committed (median ms)`,
          value: med.toFixed(1),
          target: `≤ ${targets.fanoutMs}`,
          pass: med <= targets.fanoutMs,
        },
      ],
    }
  } finally {
    await bdb.close()
  }
}
