/**
 * Scenario `soak` (`npm run bench -- --soak=3600`, never part of `npm test` or a plain run): a
 * steady load for the given seconds — by default 70 % of this run's drain rate (`--soak-rate=N`
 * deliveries/s to set it), each event to the 10 endpoints of its owner (10 owners, 100 endpoints:
 * a publish per delivery would cost more than the drain it is a share of) — with maintenance at its
 * default interval, sampling every tenth of the run (at least every 10 s, at most every 60 s)
 * the tables' and indexes' sizes, their dead tuples, the ledger's partitions and the publish →
 * delivered p99 of that window. It judges what a long run must not do, each as the end ÷ a sixth
 * of the run (≤ 1.2): the hot rows (endpoints, queue heads) must not grow at all; the history
 * (deliveries, events, ledger: kept for the retention, so they grow by design) must not grow
 * faster than the deliveries made, i.e. stay the same bytes per delivery (no bloat); dead
 * tuples must stay bounded (vacuum keeps up); p99 must not climb. Short soaks (--soak=60) check
 * that the mode works; the figures need an hour. Publishes in flight are bounded: a machine that
 * cannot keep the rate shows it as the achieved rate and a growing backlog, not as memory.
 */
import { sql } from 'kysely'
import type { Db } from '@hookledger/store'
import { createEndpoints, eventId, newDispatcher, newTransport, publish } from './fixtures.js'
import { benchDb, freshDatabase, type ScenarioContext, type ScenarioOutput } from './harness.js'
import { POOL_SIZE, SOAK_RATE, SOAK_SECONDS } from './settings.js'
import { isCompletion } from './drain-diagnostics.js'
import { shared } from './shared.js'
import { round, sleep } from './util.js'

const ENDPOINTS = 100
/** Endpoints per owner: each event goes to all of its owner's. */
const FANOUT = 10
/** Publishes in flight at most (the publisher's pool is POOL_SIZE). */
const MAX_PENDING = 64
const HOT = ['endpoints', 'endpoint_queue'] as const
const HISTORY = ['delivery_states', 'delivery_origins', 'events'] as const
const TABLES = [...HOT, ...HISTORY] as const

interface Sample {
  readonly at_s: number
  readonly bytes: Record<string, number>
  readonly dead_tuples: Record<string, number>
  readonly ledger_partitions: number
  readonly p99_ms: number | null
  readonly backlog: number
  readonly completed: number
}

async function sample(db: Db, atS: number, since: Date, published: number): Promise<Sample> {
  const sizes = (
    await sql<{ name: string; bytes: string; dead: string }>`
      select c.relname as name, pg_total_relation_size(c.oid) as bytes, coalesce(s.n_dead_tup, 0) as dead
      from pg_class c left join pg_stat_user_tables s on s.relid = c.oid
      where c.relnamespace = current_schema()::regnamespace and c.relname = any(${[...TABLES]}::text[])
    `.execute(db)
  ).rows
  const ledger = (
    await sql<{ bytes: string; dead: string; parts: number }>`
      select coalesce(sum(pg_total_relation_size(i.inhrelid)), 0) as bytes, coalesce(sum(s.n_dead_tup), 0) as dead, count(*)::int as parts
      from pg_inherits i left join pg_stat_user_tables s on s.relid = i.inhrelid
      where i.inhparent = 'ledger'::regclass
    `.execute(db)
  ).rows[0]!
  const p99 = (
    await sql<{ p99: number | null }>`
      select percentile_cont(0.99) within group (order by extract(epoch from l.occurred_at - e.published_at) * 1000) as p99
      from ledger l join events e on e.owner_id = l.owner_id and e.id = l.event_id
      where ${isCompletion('l')} and l.occurred_at >= ${since}
    `.execute(db)
  ).rows[0]!.p99
  const completed = Number((await sql<{ n: string }>`select count(*) as n from delivery_states where state = 'completed'`.execute(db)).rows[0]!.n)
  return {
    at_s: round(atS, 1),
    bytes: { ...Object.fromEntries(sizes.map((r) => [r.name, Number(r.bytes)])), ledger: Number(ledger.bytes) },
    dead_tuples: { ...Object.fromEntries(sizes.map((r) => [r.name, Number(r.dead)])), ledger: Number(ledger.dead) },
    ledger_partitions: ledger.parts,
    p99_ms: p99 === null ? null : round(Number(p99), 1),
    backlog: published - completed,
    completed,
  }
}

const total = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0)

export async function soakScenario({ env, progress }: ScenarioContext): Promise<ScenarioOutput> {
  const seconds = SOAK_SECONDS ?? 60
  const rate = SOAK_RATE ?? Math.round(0.7 * (shared.drainPerSec ?? 1_000))
  const eventRate = rate / FANOUT
  const bdb = await freshDatabase(env, 'bench_soak')
  const { db, url } = bdb
  const pubDb = benchDb(url, POOL_SIZE)
  await createEndpoints(env, db, Array.from({ length: ENDPOINTS }, (_, i) => ({ owner_id: `tenant_${Math.floor(i / FANOUT)}`, url: env.receiver.url(`/soak/${i}`) })))
  const { dispatcher, notifier } = newDispatcher(env, db, url, newTransport(env), 'bench-soak')
  const samples: Sample[] = []
  let published = 0
  let elapsedS = seconds
  const every = Math.min(60, Math.max(10, seconds / 10)) * 1000
  progress.phase(`${rate} deliveries/s for ${seconds} s`, () => `${published} published, ${samples.length} samples`)
  try {
    await dispatcher.start()
    const t0 = performance.now()
    let windowStart = new Date()
    let nextSample = t0 + every
    const pending = new Set<Promise<void>>()
    for (let k = 0; performance.now() - t0 < seconds * 1000; k++) {
      const wait = t0 + (k * 1000) / eventRate - performance.now()
      if (wait > 1) await sleep(wait)
      while (pending.size >= MAX_PENDING) await Promise.race(pending)
      const p: Promise<void> = publish(pubDb, `tenant_${k % (ENDPOINTS / FANOUT)}`, `soak_${eventId()}`).finally(() => pending.delete(p))
      pending.add(p)
      published += FANOUT
      if (performance.now() >= nextSample) {
        const now = new Date()
        samples.push(await sample(db, (performance.now() - t0) / 1000, windowStart, published))
        windowStart = now
        nextSample += every
      }
    }
    await Promise.all(pending)
    elapsedS = (performance.now() - t0) / 1000
  } finally {
    await dispatcher.stop()
    await notifier.close()
    await pubDb.destroy()
    await bdb.close()
  }
  const early = samples[Math.min(samples.length - 1, Math.max(0, Math.floor(samples.length / 6)))]
  const last = samples.at(-1)
  const ratio = (f: (s: Sample) => number) => (early && last && f(early) > 0 ? round(f(last) / f(early), 2) : null)
  const sizeRatio = ratio((s) => HOT.reduce((a, t) => a + (s.bytes[t] ?? 0), 0))
  const perDeliveryRatio = ratio((s) => ([...HISTORY, 'ledger'].reduce((a, t) => a + (s.bytes[t] ?? 0), 0)) / Math.max(1, s.completed))
  const deadRatio = ratio((s) => total(s.dead_tuples) / Math.max(1, s.completed) + 1e-9)
  // Judged like the rest, end ÷ a sixth: the first minutes include the cluster's first analyzes.
  const p99Ratio = early?.p99_ms && last?.p99_ms ? round(last.p99_ms / early.p99_ms, 2) : null
  const judged = seconds >= 3_600
  return {
    metrics: { seconds, rate_per_sec: rate, achieved_per_sec: Math.round(published / Math.max(1, elapsedS)), published, samples, hot_size_end_over_early: sizeRatio, history_bytes_per_delivery_end_over_early: perDeliveryRatio, dead_per_delivery_end_over_early: deadRatio, p99_end_over_early: p99Ratio },
    rows: [
      { metric: 'soak: deliveries/s published, asked → achieved', value: `${rate} → ${Math.round(published / Math.max(1, elapsedS))}`, target: '—', pass: null },
      { metric: `soak ${seconds} s at ${rate}/s: endpoints + queue heads (tables, indexes) at the end ÷ at a sixth`, value: String(sizeRatio), target: '≤ 1.2 (1 h)', pass: judged && sizeRatio !== null ? sizeRatio <= 1.2 : null },
      { metric: 'soak: history bytes per delivery (deliveries, events, ledger) at the end ÷ at a sixth', value: String(perDeliveryRatio), target: '≤ 1.2 (1 h)', pass: judged && perDeliveryRatio !== null ? perDeliveryRatio <= 1.2 : null },
      { metric: 'soak: dead tuples per delivery at the end ÷ at a sixth', value: String(deadRatio), target: '≤ 1.2 (1 h)', pass: judged && deadRatio !== null ? deadRatio <= 1.2 : null },
      { metric: 'soak: publish → delivered p99 (ms) at a sixth → the last window (÷)', value: `${early?.p99_ms ?? '-'} → ${last?.p99_ms ?? '-'} (${p99Ratio})`, target: 'steady', pass: null },
      { metric: 'soak: ledger partitions at the start → the end', value: `${samples[0]?.ledger_partitions ?? '-'} → ${last?.ledger_partitions ?? '-'}`, target: '—', pass: null },
    ],
  }
}
