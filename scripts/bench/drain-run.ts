/**
 * One drain, the measurement every drain scenario shares: `events` events published to
 * `endpoints` endpoints through the store, fanned out, then drained by a real Dispatcher over
 * HTTP into the receiver. The rate is first claim → last settle, read from the ledger.
 *
 * `settings: 'bench'` is the bench's dispatcher (concurrency 100, pool 4, host clock);
 * `'default'` is what `serve --role worker` builds with no settings: its concurrency, timeouts,
 * snooze budget and maintenance interval from the config defaults, the database clock, and the
 * sealer at its default interval.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks'
import path from 'node:path'
import { sql } from 'kysely'
import pg from 'pg'
import { systemClock } from '@hookledger/core'
import { DatabaseClock, DEFAULT_DB_SCHEMA, createPgNotifier, type Db } from '@hookledger/store'
import { ledgerSealState } from '@hookledger/ledger'
import { Dispatcher, LedgerSealerLoop, startSealerThread } from '@hookledger/worker'
import { attemptTimeoutsOf, loadConfig, snoozeBudgetOf } from '@hookledger/server'
import { isCompletion, startProfile, topStatements, resetStatements } from './drain-diagnostics.js'
import { startBenchWitness } from './bench-witness.js'
import { tableWritesMark, tableWritesSince } from './table-writes.js'
import { bulkCreateEndpoints, countCompleted, countStates, createEndpoints, eventId, newDispatcher, newTransport, publish, publishEach, waitCompleted } from './fixtures.js'
import { freshDatabase, type BenchDb, type Env } from './harness.js'
import { CHECKPOINT_INTERVAL_MS, OWNER, POOL_SIZE, PROFILE, QUICK, RESULTS_DIR, STATS, cfg } from './settings.js'
import { percentileMs, type Progress } from './util.js'

export interface DrainOptions {
  readonly name: string
  readonly events: number
  readonly endpoints?: number
  /** Idle endpoints of other tenants beside the busy ones (they get none of the events). */
  readonly idleEndpoints?: number
  readonly settings?: 'bench' | 'default'
  /** The ledger sealer at its default interval, sampling how far it lags (bench settings). */
  readonly sealer?: boolean
  /** Keep the database open for later scenarios (the caller closes it). */
  readonly keep?: boolean
  /** Diagnostics (--stats, --profile) apply to this drain. */
  readonly diagnose?: boolean
  /** Ledger partitions to have before the drain (the write path's cost must not grow with them). */
  readonly partitions?: number
  /**
   * The endpoints spread over this many owners (endpoint i to owner i mod n), each owner
   * publishing `events` events to its own: the same deliveries, fair share weighing n owners.
   */
  readonly owners?: number
}

export interface DrainResult {
  readonly bdb: BenchDb
  readonly total: number
  readonly perSec: number
  readonly spanMs: number
  readonly wallMs: number
  readonly publishMs: number
  readonly fanoutMs: number
  readonly concurrency: number
  readonly claims: number
  readonly settles: number
  readonly busy: number
  readonly loopDelay: { p50: number; p99: number }
  readonly cpu: Record<string, number>
  readonly lag: {
    maxRows: number
    samples: number
    catchUpMs: number
    checkpoints: number
    p50Ms: number
    p99Ms: number
    /** Checkpoint → the local witness's cosignature kept (ms), and how many sizes were cosigned. */
    cosign: { p50Ms: number; p99Ms: number; cosigned: number } | null
  }
  /** Statements this process sent to PostgreSQL during the drain, per delivery and per settle transaction. */
  readonly roundTrips: { total: number; perDelivery: number; perSettle: number }
  /** WAL bytes per delivery, and per table updates per delivery and their HOT share (table-writes.ts). */
  readonly writes: Awaited<ReturnType<typeof tableWritesSince>>
}

export async function runDrain(env: Env, progress: Progress, opts: DrainOptions): Promise<DrainResult> {
  const endpoints = opts.endpoints ?? cfg.endpoints
  const defaults = opts.settings === 'default' ? loadConfig({}) : null
  const bdb = await freshDatabase(env, opts.name, POOL_SIZE)
  const { db, url } = bdb
  const total = opts.events * endpoints
  const clock = defaults ? await DatabaseClock.start(db) : systemClock
  const transport = newTransport(env)
  let notifier: ReturnType<typeof createPgNotifier> | null = null
  let dispatcher: Dispatcher | null = null
  const concurrency = defaults ? defaults.HOOKLEDGER_CONCURRENCY : cfg.concurrency
  try {
    progress.phase(`${opts.name}: ${endpoints} endpoints${opts.idleEndpoints ? ` + ${opts.idleEndpoints} idle` : ''}, ${opts.events} events`)
    const owners = opts.owners ?? 1
    const ownerOf = (i: number) => (owners === 1 ? OWNER : `tenant_${i % owners}`)
    await createEndpoints(env, db, Array.from({ length: endpoints }, (_, i) => ({ owner_id: ownerOf(i), url: env.receiver.url(`/ep/${i}`) })))
    if (opts.idleEndpoints) {
      await bulkCreateEndpoints(env, bdb.admin, { count: opts.idleEndpoints, owner: 'idle', owners: 100, url: env.receiver.url('/idle') })
    }
    const pubStarted = performance.now()
    if (owners === 1) for (let i = 0; i < opts.events; i++) await publish(db, OWNER, eventId())
    else for (let i = 0; i < opts.events; i++) await publishEach(db, Array.from({ length: owners }, (_, o) => ownerOf(o)))
    const publishMs = performance.now() - pubStarted
    if (defaults) {
      const timeouts = attemptTimeoutsOf(defaults)
      notifier = createPgNotifier(url)
      dispatcher = new Dispatcher({
        db, clock, transport, notifier, concurrency,
        secretBox: env.secretBox, catalog: env.catalog, embedAdmits: async () => false, workerId: `bench-${opts.name}`,
        retentionMs: defaults.HOOKLEDGER_RETENTION_DAYS * 24 * 3_600_000,
        jobTimeoutMs: timeouts.jobTimeoutMs, leaseMs: timeouts.leaseMs, snoozeBudget: snoozeBudgetOf(defaults),
        shutdownGraceMs: timeouts.jobTimeoutMs, maintenanceIntervalMs: defaults.HOOKLEDGER_MAINTENANCE_INTERVAL_SECONDS * 1000,
      })
    } else {
      ;({ dispatcher, notifier } = newDispatcher(env, db, url, transport, `bench-${opts.name}`))
    }
    const fanStarted = performance.now()
    const fan = await dispatcher.fanoutOnce()
    const fanoutMs = performance.now() - fanStarted
    if (fan.enqueued !== total) throw new Error(`fan-out enqueued ${fan.enqueued}, expected ${total}`)

    if (opts.partitions) {
      // Partitions past the ones the drain writes into: only their number differs.
      const have = (await sql<{ n: string }>`select count(*)::text as n from ledger_partitions where not is_default`.execute(db)).rows[0]!.n
      const more = opts.partitions - Number(have)
      if (more > 0) await sql`select hookledger_ledger_partitions_ahead(${50_000_000}::bigint, ${Number(have) + more}::integer)`.execute(db)
    }
    const diagnose = opts.diagnose ?? false
    if (diagnose && STATS) await resetStatements(bdb.admin)
    // The history written before the drain (publish, fan-out) is sealed first, as a running
    // sealer would have: the drain measures sealing what it writes, not a backlog it inherited.
    // As the service seals: on a thread of its own, with its own connection; started (and its
    // modules loaded) before the clock starts, as a running service's would be.
    const sealerThread = opts.sealer || defaults ? startSealerThread({ url: bdb.serviceUrl, schema: DEFAULT_DB_SCHEMA, key: env.ledgerKey }) : null
    if (sealerThread) for (let i = 0; i < 100 && (await sealerThread.seal({ now: clock.now() })).rows > 0; i++);
    // After the fan-out's own counts have arrived (each of its deliveries inserted a state row),
    // before the clock starts.
    const writesBefore = await tableWritesMark(bdb.admin, total)
    await env.receiver.reset()
    env.cpu.start()
    const loopDelay = monitorEventLoopDelay({ resolution: 5 })
    loopDelay.enable()
    const profiler = diagnose && PROFILE ? await startProfile() : null
    const started = performance.now()
    // With the sealer sampled: one local witness over loopback, cosigning each checkpoint.
    const witness = opts.sealer ? await startBenchWitness(db) : null
    const sealer = sealerThread
      ? new LedgerSealerLoop({
          db, key: env.ledgerKey, clock, seal: sealerThread.seal,
          intervalMs: defaults ? defaults.HOOKLEDGER_CHECKPOINT_INTERVAL_SECONDS * 1000 : CHECKPOINT_INTERVAL_MS,
          ...(witness ? { witnesses: witness.submitter(env.ledgerKey) } : {}),
        })
      : null
    const lag = { maxRows: 0, samples: 0 }
    // The age of the first row (in chain order) no signed checkpoint covers yet, every 250 ms: a
    // delivery's outcome is in a signed checkpoint at most about that long after it was written.
    // One index probe each (a scan of every unsealed row would load the database it measures).
    const lagMs: number[] = []
    const sampler = opts.sealer
      ? setInterval(() => {
          void ledgerSealState(db).then((st) => {
            lag.samples++
            lag.maxRows = Math.max(lag.maxRows, Number(st.latestPosition ?? 0) - Number(st.sealedPosition ?? 0))
          })
          void sql<{ ms: number | null }>`
            select (extract(epoch from clock_timestamp() - l.occurred_at) * 1000)::float8 as ms from ledger l
            where (l.tx_id, l.position) > coalesce((select (c.last_tx_id, c.last_position) from ledger_checkpoints c order by c.seq desc limit 1), ('0'::xid8, 0::bigint))
            order by l.tx_id, l.position limit 1
          `.execute(db).then((r) => lagMs.push(Math.max(0, r.rows[0]?.ms ?? 0)), () => {})
        }, 250)
      : null
    const sealerStartedAt = clock.now()
    sealer?.start()
    progress.phase(`${opts.name}: draining ${total} deliveries at concurrency ${concurrency}`, async () => `${await countCompleted(db)} of ${total} completed`)
    const statementsBefore = statementsSent()
    await dispatcher.start()
    await env.receiver.waitFor(total, QUICK ? 60_000 : 300_000)
    const statements = statementsSent() - statementsBefore
    await waitCompleted(db, total, 30_000)
    const wallMs = performance.now() - started
    if (sampler) clearInterval(sampler)
    // How long after the last settle until every row is sealed (at most one interval, plus the seal).
    const sealStarted = performance.now()
    if (sealer) await sealer.stop()
    await sealerThread?.close()
    const catchUpMs = performance.now() - sealStarted
    const cosign = witness ? await witness.lag(sealerStartedAt) : null
    witness?.close()
    loopDelay.disable()
    await profiler?.stop(path.join(RESULTS_DIR, 'drain.cpuprofile'))
    const cpu = env.cpu.stop()
    await dispatcher.stop()
    if (diagnose && STATS) await topStatements(bdb.admin)

    // Each delivery's state row is updated at least twice (claimed, settled).
    const writes = await tableWritesSince(bdb.admin, writesBefore, total, 2 * total)
    const states = await countStates(db)
    if (states['completed'] !== total) throw new Error(`states after drain: ${JSON.stringify(states)}`)
    const { count: received } = await env.receiver.dump()
    if (received !== total) throw new Error(`receiver saw ${received} requests for ${total} deliveries`)
    const span = await drainSpan(db)
    const spanMs = Math.max(1, span.last_settle.getTime() - span.first_claim.getTime())
    return {
      bdb, total, concurrency, publishMs, fanoutMs, wallMs, spanMs, cpu,
      perSec: (total / spanMs) * 1000,
      claims: Number(span.claims),
      settles: Number(span.settles),
      busy: Number(span.busy),
      roundTrips: { total: statements, perDelivery: statements / total, perSettle: statements / Math.max(1, Number(span.settles)) },
      loopDelay: { p50: loopDelay.percentile(50) / 1e6, p99: loopDelay.percentile(99) / 1e6 },
      lag: { ...lag, catchUpMs, checkpoints: sealer ? (await ledgerSealState(db)).checkpoints : 0, p50Ms: percentileMs(lagMs, 50), p99Ms: percentileMs(lagMs, 99), cosign },
      writes,
    }
  } finally {
    await dispatcher?.stop()
    await notifier?.close().catch(() => {})
    await transport.close()
    if (clock instanceof DatabaseClock) clock.stop()
    if (!opts.keep) await bdb.close()
  }
}

/**
 * Statements sent by every pg client of this process so far (a wrapper on `Client#query`, set
 * once): the drain's round trips, counted rather than estimated. Progress probes are included;
 * they are a handful a second.
 */
let sent = 0
let counting = false
function statementsSent(): number {
  if (!counting) {
    counting = true
    const query = pg.Client.prototype.query
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      sent++
      return (query as (...a: unknown[]) => unknown).apply(this, args)
    } as typeof query
  }
  return sent
}

/** First claim and last settle of the drain, and how many claim / settle transactions it took. */
async function drainSpan(db: Db) {
  return (
    await sql<{ first_claim: Date; last_settle: Date; claims: string; settles: string; busy: string }>`
      select min(occurred_at) filter (where kind = 'delivery.claimed') as first_claim,
             max(occurred_at) filter (where ${isCompletion()}) as last_settle,
             count(distinct occurred_at) filter (where kind = 'delivery.claimed') as claims,
             count(distinct occurred_at) filter (where ${isCompletion()}) as settles,
             count(*) filter (where kind = 'delivery.lease_busy') as busy
      from ledger
    `.execute(db)
  ).rows[0]!
}
