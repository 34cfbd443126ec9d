/**
 * Scenario `claim`: one batch claim of 64 over 100 endpoints with 10,000 vs 1,000,000 due
 * deliveries (+100,000 completed beside them): the claim's cost must not follow the backlog.
 * Synthetic rows in SQL with triggers off (no ledger history): replay is not run here.
 */
import { sql } from 'kysely'
import { JOB_TIMEOUT_MS, LEASED_HEAD_GRID_MS } from '@hookledger/core'
import { deliveryClaim, deliveryRescue, endpointQueueRebuildAll, type Db } from '@hookledger/store'
// The forgery helper alone: the testkit index needs a running vitest.
import { forgeDeliveries } from '@hookledger/testkit/delivery-forgery'
import { countStates, createEndpoints } from './fixtures.js'
import { freshDatabase, type ScenarioContext, type ScenarioOutput } from './harness.js'
import { EVENT_TYPE, OWNER, cfg, targets } from './settings.js'
import { median, round } from './util.js'

/** Adds `events` events (ids from `from`) each with one delivery per endpoint, in SQL. */
async function generateRows(
  db: Db,
  params: { from: number; events: number; state: 'pending' | 'completed'; base: Date },
): Promise<void> {
  const { from, events, state, base } = params
  const to = from + events - 1
  // Older events are due earlier; every due row is due before `base` (the claims' first now).
  // Synthetic rows with no ledger history: written with triggers off (the projection guard
  // would refuse them), in one transaction so the settings apply to the same connection.
  await db.transaction().execute(async (trx) => {
    await sql`set local synchronous_commit = off`.execute(trx)
    await sql`set local session_replication_role = replica`.execute(trx)
    await sql`
      insert into events (owner_id, id, type, subject, occurred_at, published_at, data, fanned_out_at)
      select ${OWNER}::text, 'evt_' || g, ${EVENT_TYPE}::text, 'booking://' || g, t, t, jsonb_build_object('booking_id', 'b' || g), t
      from generate_series(${from}::int, ${to}::int) g,
           lateral (select ${base}::timestamptz - interval '2 days' + g * interval '1 ms' as t) x
    `.execute(trx)
    const completed = state === 'completed'
    await forgeDeliveries(trx, sql`
      select gen_random_uuid(), ${OWNER}::text, e.id, 'evt_' || g, ${EVENT_TYPE}::text, ${state}::text, 1, t,
        ${completed ? 1 : 0}::int, ${completed ? sql`null` : sql`t`}, null, null, ${completed ? sql`204` : sql`null`}, null, t, t
      from generate_series(${from}::int, ${to}::int) g
      cross join (select id from endpoints order by created_at, id) e,
      lateral (select ${base}::timestamptz - interval '2 days' + g * interval '1 ms' as t) x
    `)
    // The claim reads the queue heads, which the write primitive keeps; these rows bypassed it.
    await endpointQueueRebuildAll(trx)
  })
  await sql`vacuum analyze delivery_origins`.execute(db)
  await sql`vacuum analyze delivery_states`.execute(db)
  await sql`vacuum analyze events`.execute(db)
}

export async function claimScenario({ env, progress }: ScenarioContext): Promise<ScenarioOutput> {
  const bdb = await freshDatabase(env, 'bench_claim', 1)
  const { db } = bdb
  const E = cfg.claimEndpoints
  try {
    await createEndpoints(
      env,
      db,
      Array.from({ length: E }, (_, i) => ({ owner_id: OWNER, url: env.receiver.url(`/ep/${i}`) })),
    )
    const base = new Date()
    let run = 0
    // Each claim runs at a later `now` than the last by more than a lease and the queue heads' grid
    // (core leased-head.ts), so every endpoint is leasable and ready again and each claim takes
    // fresh rows. Before each, untimed, the rescuer takes the previous claim's deliveries back: a
    // claim taking their lapsed leases over would rescue them itself (delivery-rescue.ts), and
    // that is not the claim this measures.
    const nextNow = () => new Date(base.getTime() + run++ * (JOB_TIMEOUT_MS + LEASED_HEAD_GRID_MS + 1_000))
    const measure = async (): Promise<{ medianMs: number; runs: number[]; claimed: number[] }> => {
      const warm = nextNow()
      await deliveryRescue(db, { now: warm, limit: 100_000 })
      await deliveryClaim(db, { now: warm, limit: cfg.claimLimit, actor: 'worker:bench' }) // warm-up
      const runs: number[] = []
      const claimed: number[] = []
      for (let i = 0; i < cfg.claimRuns; i++) {
        const now = nextNow()
        await deliveryRescue(db, { now, limit: 100_000 })
        const t = performance.now()
        const r = await deliveryClaim(db, { now, limit: cfg.claimLimit, actor: 'worker:bench' })
        runs.push(round(performance.now() - t, 2))
        claimed.push(r.claimed.length)
      }
      if (claimed.some((c) => c !== Math.min(cfg.claimLimit, E)))
        throw new Error(`claims took ${claimed.join(',')} rows`)
      return { medianMs: median(runs), runs, claimed }
    }
    const eventsFor = (deliveries: number) => Math.max(1, Math.round(deliveries / E))
    const completedEvents = eventsFor(cfg.claimCompleted)
    const smallEvents = eventsFor(cfg.claimSmall)
    const largeEvents = eventsFor(cfg.claimLarge)
    progress.phase(`generating ${(completedEvents * E).toLocaleString('en')} completed + ${(smallEvents * E).toLocaleString('en')} due deliveries`)
    let t = performance.now()
    await generateRows(bdb.admin, { from: 1, events: completedEvents, state: 'completed', base })
    await generateRows(bdb.admin, {
      from: completedEvents + 1,
      events: smallEvents,
      state: 'pending',
      base,
    })
    const genSmallMs = performance.now() - t
    progress.phase('claiming at the small backlog')
    const small = await measure()
    progress.phase(`generating up to ${(largeEvents * E).toLocaleString('en')} due deliveries`)
    t = performance.now()
    await generateRows(bdb.admin, {
      from: completedEvents + smallEvents + 1,
      events: largeEvents - smallEvents,
      state: 'pending',
      base,
    })
    const genLargeMs = performance.now() - t
    progress.phase('claiming at the large backlog')
    const large = await measure()
    const states = await countStates(db)
    const growth = large.medianMs / small.medianMs
    return {
      metrics: {
        endpoints: E,
        limit: cfg.claimLimit,
        due_small: smallEvents * E,
        due_large: largeEvents * E,
        completed_beside: completedEvents * E,
        states_after: states,
        small_median_ms: small.medianMs,
        large_median_ms: large.medianMs,
        small_runs_ms: small.runs,
        large_runs_ms: large.runs,
        growth_factor: round(growth, 2),
        generate_small_ms: Math.round(genSmallMs),
        generate_large_ms: Math.round(genLargeMs),
        note: 'synthetic rows (no ledger history); replay-verify is not run on this database',
      },
      rows: [
        {
          metric: `claim ${cfg.claimLimit} @ ${(smallEvents * E).toLocaleString('en')} due (median ms)`,
          value: small.medianMs.toFixed(2),
          target: '—',
          pass: null,
        },
        {
          metric: `claim ${cfg.claimLimit} @ ${(largeEvents * E).toLocaleString('en')} due (median ms)`,
          value: large.medianMs.toFixed(2),
          target: '—',
          pass: null,
        },
        {
          metric: 'claim growth factor (large ÷ small)',
          value: round(growth, 2).toFixed(2),
          target: `≤ ${targets.claimGrowth}`,
          pass: growth <= targets.claimGrowth,
        },
      ],
    }
  } finally {
    await bdb.close()
  }
}
