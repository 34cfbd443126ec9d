/**
 * Scenario `publish-many`: an application publishes 10,000 events with `@hookledger/publisher`'s
 * `publishMany` inside one transaction of its own (one statement) and commits: wall time to the
 * commit, events/s. Each run uses fresh ids; the rows and their `event.published` entries are
 * counted after every commit.
 */
import { sql } from 'kysely'
import { createPublisher } from '@hookledger/publisher'
import { freshDatabase, type ScenarioContext, type ScenarioOutput } from './harness.js'
import { OWNER, scaled } from './settings.js'
import { median, round } from './util.js'

const RUNS = 3

export async function publishManyScenario({ env, progress }: ScenarioContext): Promise<ScenarioOutput> {
  const bdb = await freshDatabase(env, 'bench_publish_many')
  const { db } = bdb
  const n = scaled(10_000)
  const publisher = createPublisher({ catalog: env.catalog })
  try {
    const runs: number[] = []
    for (let r = 0; r < RUNS; r++) {
      progress.phase(`run ${r + 1}/${RUNS}: publishMany of ${n.toLocaleString('en')} events in one transaction`)
      const events = Array.from({ length: n }, (_, i) => ({
        owner_id: OWNER,
        id: `evt_many_${r}_${i}`,
        type: 'booking.created',
        subject: `booking://${r}/${i}`,
        data: { booking_id: `${r}-${i}` },
      }))
      const t0 = performance.now()
      await db.transaction().execute((trx) => publisher.publishMany(trx, events))
      runs.push(round(performance.now() - t0, 1))
      const counted = await sql<{ events: string; entries: string }>`
        select (select count(*) from events where id like ${`evt_many_${r}_%`})::text as events,
               (select count(*) from ledger where kind = 'event.published' and event_id like ${`evt_many_${r}_%`})::text as entries
      `.execute(db)
      const { events: stored, entries } = counted.rows[0]!
      if (Number(stored) !== n || Number(entries) !== n) throw new Error(`run ${r}: ${stored} events, ${entries} entries, expected ${n}`)
    }
    const med = median(runs)
    return {
      metrics: { events: n, runs_ms: runs, median_ms: med, events_per_s: Math.round((n / med) * 1000) },
      rows: [
        { metric: `publishMany ${n.toLocaleString('en')} events in one transaction, to commit (median ms)`, value: med.toFixed(1), target: '—', pass: null },
        { metric: 'publishMany events/s (one transaction)', value: String(Math.round((n / med) * 1000)), target: '—', pass: null },
      ],
    }
  } finally {
    await bdb.close()
  }
}
