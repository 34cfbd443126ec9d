/**
 * `npm run bench [-- --quick]`: throughput, latency and scale of the real delivery path, each
 * measured against this machine's own limit in the same run.
 *
 * One embedded PostgreSQL (a throwaway cluster under os.tmpdir(), production durability:
 * fsync, synchronous_commit and full_page_writes stay on; stock settings otherwise) and one
 * loopback receiver in a separate process (scripts/bench-receiver.mjs: answers 204, counts,
 * reports arrival times). Each scenario gets a fresh database in that cluster, migrated with the
 * real migrations, and drives the real store, dispatcher and HTTP transport:
 *
 *   ceiling    the HTTP client stack alone (executeDelivery: sign + guarded transport), no DB
 *   drain      20,000 deliveries (200 events x 100 endpoints) published and fanned out, drained
 *   footprint  bytes per completed delivery after the drain; ledger rows per delivery
 *   replay     ledgerReplayVerify over the drain's ledger (must find no difference)
 *   drain-v1a  the drain with every endpoint on v1a (ed25519) vs v1 (HMAC), same run (bench-v1a.ts)
 *   latency    200 events/s for 30 s, one endpoint each (50 endpoints): publish -> arrival
 *   claim      one claim of 64 with 10k vs 1M due deliveries (+100k completed), synthetic rows
 *   fanout     one event to 1,000 endpoints: publish -> deliveries committed (their NOTIFY)
 *
 * `--quick` runs every scenario at 1/50 scale (a smoke test for `npm test`); the process exits
 * non-zero if a scenario errors, never because it is slow. `--only=drain,latency` picks
 * scenarios (footprint and replay need drain). Prints one JSON line per scenario as it finishes
 * and a table at the end; writes everything to bench-results/latest.json.
 *
 * Diagnostics: `--stats` (pg_stat_statements top statements of the drain), `--explain=<ms>`
 * (auto_explain of slower statements into bench-results/explain.log), `--profile` (CPU profile
 * of this process during the drain into bench-results/drain.cpuprofile), `--replay-phases`.
 */
import { fork, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import {
  appendFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os'
import path from 'node:path'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { sql } from 'kysely'
import pg from 'pg'
import {
  JOB_TIMEOUT_MS,
  createEgressPolicy,
  createEventCatalog,
  createSecretBox,
  generateLedgerSigningKey,
  generateMasterKey,
  generateWebhookSecret,
  parseLedgerSigningKey,
  secretKeyId,
  systemClock,
  type EndpointRow,
  type LedgerSigningKey,
} from '@hookledger/core'
import {
  DELIVERIES_CHANNEL,
  createDb,
  createPgNotifier,
  deliveryClaim,
  endpointQueueRebuildAll,
  endpointCreate,
  eventInsert,
  ledgerReplayVerify,
  ledgerSealState,
  migrateToLatest,
  openEmbeddedDatabase,
  type ClaimedDelivery,
  type Db,
  type EmbeddedDatabase,
} from '@hookledger/store'
import { Dispatcher, LedgerSealerLoop, createHttpTransport, executeDelivery } from '@hookledger/worker'
import { sealScenario } from './bench-seal.js'
import { replayPhases } from './bench-replay-phases.js'
import { drainV1aScenario } from './bench-v1a.js'

// ---------------------------------------------------------------------------------------------
// Settings

const argv = process.argv.slice(2)
const QUICK = argv.includes('--quick')
const ONLY =
  argv
    .find((a) => a.startsWith('--only='))
    ?.slice('--only='.length)
    .split(',') ?? null
/** Diagnostics: load pg_stat_statements and print the drain's top statements. */
const STATS = argv.includes('--stats')
/** Diagnostics: CPU-profile this process during the drain into bench-results/drain.cpuprofile. */
const PROFILE = argv.includes('--profile')
/** Diagnostics: auto_explain statements slower than this many ms into bench-results/explain.log. */
const EXPLAIN_MS = argv.find((a) => a.startsWith('--explain='))?.slice('--explain='.length) ?? null
const SCALE = QUICK ? 1 / 50 : 1
const scaled = (n: number, min = 1) => Math.max(min, Math.round(n * SCALE))

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const RESULTS_FILE = path.join(ROOT, 'bench-results', 'latest.json')

/** PostgreSQL settings beyond the library defaults. Durability stays on (production-like). */
const PG_SETTINGS: Record<string, string> = {
  max_connections: '100',
  // Keep the cluster's noise out of the measurements: no statement/connection logging.
  log_min_messages: 'warning',
  ...(STATS || EXPLAIN_MS
    ? {
        shared_preload_libraries: [
          STATS ? 'pg_stat_statements' : '',
          EXPLAIN_MS ? 'auto_explain' : '',
        ]
          .filter(Boolean)
          .join(','),
        ...(STATS ? { 'pg_stat_statements.track_planning': 'on' } : {}),
      }
    : {}),
  ...(EXPLAIN_MS
    ? {
        'auto_explain.log_min_duration': `${EXPLAIN_MS}ms`,
        'auto_explain.log_analyze': 'on',
        'auto_explain.log_buffers': 'on',
        log_min_messages: 'info',
      }
    : {}),
}

const POOL_SIZE = 4
const OWNER = 'bench'
const EVENT_TYPE = 'booking.created'

const cfg = {
  // 1. ceiling / 2. drain: 200 events × 100 endpoints = 20,000 deliveries.
  endpoints: 100,
  drainEvents: scaled(200, 2),
  concurrency: 100,
  // 3. latency: 200 events/s for 30 s, each to one of 50 endpoints (one per tenant).
  latencyEndpoints: 50,
  latencyRate: 200,
  latencySeconds: 30 * SCALE,
  // 4. claim: one batch claim of 64 with 10k vs 1M due (+100k completed beside them).
  claimLimit: 64,
  claimEndpoints: 100,
  claimSmall: scaled(10_000, 500),
  claimLarge: scaled(1_000_000, 1_000),
  claimCompleted: scaled(100_000, 100),
  claimRuns: QUICK ? 5 : 9,
  // 7. fan-out: one event to 1,000 endpoints.
  fanoutEndpoints: scaled(1_000, 10),
  fanoutRuns: 3,
}

const targets = {
  drainRatio: 0.6,
  drainPerSec: 1_000,
  latencyP50: 25,
  latencyP99: 150,
  claimGrowth: 2,
  footprintBytes: 2048,
  replayRowsPerSec: 50_000,
  fanoutMs: 1_000,
}

// ---------------------------------------------------------------------------------------------
// Small helpers

const wall = () => performance.timeOrigin + performance.now()
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))
const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[i]!
}
const median = (xs: readonly number[]) =>
  percentile(
    [...xs].sort((a, b) => a - b),
    50,
  )

async function until<T>(
  what: string,
  timeoutMs: number,
  probe: () => Promise<T | null>,
  everyMs = 20,
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = await probe()
    if (v !== null) return v
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await sleep(everyMs)
  }
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let t: NodeJS.Timeout | undefined
  return Promise.race([
    p,
    new Promise<T>(
      (_, reject) =>
        (t = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms)),
    ),
  ]).finally(() => clearTimeout(t))
}

const log = (line: string) => process.stderr.write(`[bench] ${line}\n`)

/** CPU ms (user + system) of a process and its live children, from /proc (Linux only). */
function procCpuMs(rootPid: number, withChildren: boolean): number {
  const ticks = (stat: string) => {
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return { ppid: Number(f[1]), cpu: Number(f[11]) + Number(f[12]) }
  }
  try {
    let total = ticks(readFileSync(`/proc/${rootPid}/stat`, 'utf8')).cpu
    if (withChildren) {
      for (const name of readdirSync('/proc')) {
        if (!/^\d+$/.test(name)) continue
        try {
          const t = ticks(readFileSync(`/proc/${name}/stat`, 'utf8'))
          if (t.ppid === rootPid) total += t.cpu
        } catch {
          // gone
        }
      }
    }
    return total * 10 // USER_HZ is 100 on Linux
  } catch {
    return NaN
  }
}

/** Where the CPU went between two snapshots: this process, the receiver, PostgreSQL. */
class CpuMeter {
  #pgPid: number
  #receiverPid: number
  #start = { main: 0, receiver: 0, postgres: 0, wall: 0 }
  constructor(pgPid: number, receiverPid: number) {
    this.#pgPid = pgPid
    this.#receiverPid = receiverPid
  }
  #now() {
    const u = process.cpuUsage()
    return {
      main: (u.user + u.system) / 1000,
      receiver: procCpuMs(this.#receiverPid, false),
      postgres: procCpuMs(this.#pgPid, true),
      wall: performance.now(),
    }
  }
  start(): void {
    this.#start = this.#now()
  }
  /** CPU ms of each part since start(), and the share of the machine's cores they used. */
  stop(): Record<string, number> {
    const end = this.#now()
    const wallMs = end.wall - this.#start.wall
    const main = end.main - this.#start.main
    const receiver = end.receiver - this.#start.receiver
    const postgres = end.postgres - this.#start.postgres
    return {
      main_ms: Math.round(main),
      receiver_ms: Math.round(receiver),
      postgres_ms: Math.round(postgres),
      cores_used: round((main + receiver + postgres) / wallMs, 2),
      machine_load: round(loadavg()[0] ?? NaN, 2),
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The receiver process

type ReceiverReply = { op: string; ref?: number; [k: string]: unknown }

class Receiver {
  #child: ChildProcess
  #ref = 0
  #pending = new Map<number, (m: ReceiverReply) => void>()
  port = 0
  pid = 0

  private constructor(child: ChildProcess) {
    this.#child = child
    child.on('message', (m: ReceiverReply) => {
      if (m.ref === undefined) return
      const done = this.#pending.get(m.ref)
      this.#pending.delete(m.ref)
      done?.(m)
    })
  }

  static async start(): Promise<Receiver> {
    const child = fork(path.join(ROOT, 'scripts', 'bench-receiver.mjs'), [], {
      execArgv: [],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    const r = new Receiver(child)
    const ready = await withTimeout(
      new Promise<ReceiverReply>((resolve, reject) => {
        child.once('message', (m: ReceiverReply) => resolve(m))
        child.once('exit', (code) => reject(new Error(`receiver exited with ${code}`)))
      }),
      10_000,
      'receiver start',
    )
    r.port = Number(ready['port'])
    r.pid = Number(ready['pid'])
    return r
  }

  url(p = '/'): string {
    return `http://127.0.0.1:${this.port}${p}`
  }

  call(
    op: string,
    extra: Record<string, unknown> = {},
    timeoutMs = 30_000,
  ): Promise<ReceiverReply> {
    const ref = ++this.#ref
    const p = new Promise<ReceiverReply>((resolve) => this.#pending.set(ref, resolve))
    this.#child.send({ op, ref, ...extra })
    return withTimeout(p, timeoutMs, `receiver ${op}`).finally(() => this.#pending.delete(ref))
  }

  async reset(record = false): Promise<void> {
    await this.call('reset')
    await this.call('record', { on: record })
  }

  /** Resolves with the receiver's clock when it has answered `n` requests since the reset. */
  async waitFor(n: number, timeoutMs: number): Promise<number> {
    try {
      return Number((await this.call('waitFor', { n }, timeoutMs))['at'])
    } catch (err) {
      const { count } = await this.call('count')
      throw new Error(`${(err as Error).message} (receiver saw ${String(count)} of ${n})`)
    }
  }

  async dump(): Promise<{ arrivals: [string, string, number][]; count: number }> {
    const m = await this.call('dump', {}, 60_000)
    return { arrivals: m['arrivals'] as [string, string, number][], count: Number(m['count']) }
  }

  /** Offset of the receiver's clock from ours (ms), from the midpoint of an IPC round trip. */
  async clockSkew(): Promise<{ skewMs: number; rttMs: number }> {
    const samples: { skew: number; rtt: number }[] = []
    for (let i = 0; i < 9; i++) {
      const t0 = wall()
      const at = Number((await this.call('clock'))['at'])
      const t1 = wall()
      samples.push({ skew: at - (t0 + t1) / 2, rtt: t1 - t0 })
    }
    samples.sort((a, b) => a.rtt - b.rtt)
    return { skewMs: round(samples[0]!.skew, 2), rttMs: round(samples[0]!.rtt, 2) }
  }

  async stop(): Promise<void> {
    if (this.#child.exitCode !== null) return
    const exited = new Promise<void>((r) => this.#child.once('exit', () => r()))
    this.#child.send({ op: 'exit' })
    await withTimeout(exited, 5_000, 'receiver exit').catch(() => this.#child.kill())
  }
}

// ---------------------------------------------------------------------------------------------
// The shared environment

interface Env {
  readonly pg: EmbeddedDatabase
  readonly receiver: Receiver
  readonly secretBox: ReturnType<typeof createSecretBox>
  readonly catalog: ReturnType<typeof createEventCatalog>
  readonly policy: ReturnType<typeof createEgressPolicy>
  readonly cpu: CpuMeter
  readonly ledgerKey: LedgerSigningKey
}

interface BenchDb {
  readonly name: string
  readonly url: string
  readonly db: Db
  close(): Promise<void>
}

async function freshDatabase(env: Env, name: string, poolSize = POOL_SIZE): Promise<BenchDb> {
  const admin = new pg.Client({ connectionString: env.pg.url('postgres') })
  await admin.connect()
  try {
    await admin.query(`drop database if exists ${name}`)
    await admin.query(`create database ${name}`)
  } finally {
    await admin.end()
  }
  const url = env.pg.url(name)
  const db = createDb(new pg.Pool({ connectionString: url, max: poolSize }))
  await migrateToLatest(db)
  return { name, url, db, close: () => db.destroy() }
}

/** Creates endpoints through the store's one writer (the `webhooks.create` path). */
async function createEndpoints(
  env: Env,
  db: Db,
  specs: readonly { owner_id: string; url: string; event_types?: string[] }[],
): Promise<EndpointRow[]> {
  const out: EndpointRow[] = []
  for (let i = 0; i < specs.length; i += 100) {
    const chunk = specs.slice(i, i + 100)
    const rows = await db.transaction().execute(async (trx) => {
      const made: EndpointRow[] = []
      for (const s of chunk) {
        const secret = generateWebhookSecret()
        made.push(
          await endpointCreate(
            trx,
            { owner_id: s.owner_id, now: systemClock.now(), actor: 'owner:bench' },
            {
              url: s.url,
              description: 'bench',
              event_types: s.event_types ?? ['*'],
              embed_id: null,
              secret_sealed: env.secretBox.seal(secret),
              secret_key_id: secretKeyId(secret),
            },
          ),
        )
      }
      return made
    })
    out.push(...rows)
  }
  return out
}

/** An event id as `POST /api/events` makes one when the publisher sends none: `evt_` + 32 hex. */
const eventId = () => `evt_${randomUUID().replaceAll('-', '')}`

/** Publishes one event through the store's publish path (the transactional outbox). */
async function publish(db: Db, owner_id: string, id: string): Promise<void> {
  const now = systemClock.now()
  await db.transaction().execute((trx) =>
    eventInsert(trx, {
      owner_id,
      now,
      actor: 'system',
      event: {
        id,
        type: EVENT_TYPE,
        subject: `booking://${id}`,
        occurred_at: now,
        data: { booking_id: id },
      },
    }),
  )
}

function newTransport(env: Env) {
  return createHttpTransport({ policy: env.policy })
}

function newDispatcher(
  env: Env,
  db: Db,
  url: string,
  transport: ReturnType<typeof newTransport>,
  workerId: string,
) {
  const notifier = createPgNotifier(url)
  const dispatcher = new Dispatcher({
    db,
    clock: systemClock,
    transport,
    secretBox: env.secretBox,
    catalog: env.catalog,
    embedAdmits: async () => false,
    workerId,
    notifier,
    concurrency: cfg.concurrency,
  })
  return { dispatcher, notifier }
}

async function countStates(db: Db): Promise<Record<string, number>> {
  const rows = (
    await sql<{
      state: string
      n: string
    }>`select state, count(*) as n from deliveries group by state`.execute(db)
  ).rows
  return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]))
}

/** Waits until `total` deliveries are completed (settles are batched a few ms after the POST). */
async function waitCompleted(db: Db, total: number, timeoutMs: number): Promise<void> {
  await until(`${total} completed deliveries`, timeoutMs, async () => {
    const n = Number(
      (
        await sql<{
          n: string
        }>`select count(*) as n from deliveries where state = 'completed'`.execute(db)
      ).rows[0]!.n,
    )
    return n >= total ? true : null
  })
}

async function replayClean(
  db: Db,
  where: string,
): Promise<Awaited<ReturnType<typeof ledgerReplayVerify>>> {
  const report = await ledgerReplayVerify(db)
  if (report.differencesTotal > 0) {
    const first = report.differences[0]
    throw new Error(
      `${where}: ledgerReplayVerify found ${report.differencesTotal} differences (first: ${first ? `${first.table} ${first.key} ${first.kind} ${first.problem ?? first.columns.join(',')}` : '—'})`,
    )
  }
  return report
}

// ---------------------------------------------------------------------------------------------
// Results

interface Row {
  readonly metric: string
  readonly value: string
  readonly target: string
  readonly pass: boolean | null
}

interface ScenarioResult {
  scenario: string
  ok: boolean
  error?: string
  seconds: number
  metrics: Record<string, unknown>
  rows: Row[]
}

const results: ScenarioResult[] = []
const shared: { ceilingPerSec?: number; drain?: BenchDb; drainPerSec?: number; sealedPerSec?: number } = {}

/** The sealer's default interval (HOOKLEDGER_CHECKPOINT_INTERVAL_SECONDS). */
const CHECKPOINT_INTERVAL_MS = 10_000

async function scenario(
  name: string,
  run: () => Promise<{ metrics: Record<string, unknown>; rows: Row[] }>,
) {
  if (ONLY && !ONLY.includes(name)) return
  log(`${name}: start`)
  const started = performance.now()
  let result: ScenarioResult
  try {
    const { metrics, rows } = await run()
    result = {
      scenario: name,
      ok: true,
      seconds: round((performance.now() - started) / 1000, 2),
      metrics,
      rows,
    }
  } catch (err) {
    const error = err instanceof Error ? (err.stack ?? err.message) : String(err)
    result = {
      scenario: name,
      ok: false,
      error,
      seconds: round((performance.now() - started) / 1000, 2),
      metrics: {},
      rows: [],
    }
    log(`${name}: ERROR ${error}`)
  }
  results.push(result)
  const { rows: _rows, ...json } = result
  process.stdout.write(JSON.stringify({ bench: json.scenario, ...json }) + '\n')
}

// ---------------------------------------------------------------------------------------------
// 1. ceiling: the same client stack, no database

function syntheticClaims(env: Env, n: number): ClaimedDelivery[] {
  const t = new Date()
  return Array.from({ length: n }, (_, i) => {
    const secret = generateWebhookSecret()
    const endpoint: EndpointRow = {
      id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
      owner_id: OWNER,
      url: env.receiver.url(`/ep/${i}`),
      description: '',
      event_types: ['*'],
      embed_id: null,
      secret_sealed: env.secretBox.seal(secret),
      secret_key_id: secretKeyId(secret),
      prev_secret_sealed: null,
      prev_secret_key_id: null,
      prev_secret_expires_at: null,
      enabled: true,
      disabled_reason: null,
      failing_since: null,
      busy_until: null,
      busy_delivery_id: null,
      deleted_at: null,
      created_at: t,
      updated_at: t,
      signature_scheme: 'v1',
      v1a_key_sealed: null,
      v1a_public_key: null,
      prev_v1a_key_sealed: null,
      prev_v1a_public_key: null,
      prev_v1a_key_expires_at: null,
    }
    const eventId = `evt_ceiling_${i}`
    return {
      endpoint,
      event: {
        id: eventId,
        type: EVENT_TYPE,
        subject: `booking://${eventId}`,
        occurred_at: t,
        data: { booking_id: eventId },
      },
      delivery: {
        id: `00000000-0000-4000-9000-${String(i).padStart(12, '0')}`,
        owner_id: OWNER,
        endpoint_id: endpoint.id,
        event_id: eventId,
        event_type: EVENT_TYPE,
        state: 'running',
        run: 1,
        run_started_at: t,
        attempts: 0,
        snoozes: 0,
        snoozed_ms: 0,
        next_attempt_at: t,
        claimed_by: 'worker:ceiling',
        lease_until: new Date(t.getTime() + JOB_TIMEOUT_MS),
        last_status: null,
        last_error: null,
        created_at: t,
        updated_at: t,
      },
    }
  })
}

/** `total` requests through executeDelivery (sign + guarded transport + classify), `c` at a time. */
async function ceilingRun(env: Env, total: number, c: number) {
  const transport = newTransport(env)
  const claims = syntheticClaims(env, c)
  const deps = { clock: systemClock, transport, secretBox: env.secretBox, actor: 'worker:ceiling' }
  let next = 0
  let failed = 0
  const worker = async (slot: number) => {
    while (next < total) {
      next++
      const s = await executeDelivery(claims[slot]!, deps)
      if (s.outcome.type !== 'completed') failed++
    }
  }
  try {
    // Warm-up: open the keep-alive sockets and let the JIT settle.
    for (let round = 0; round < 10; round++) {
      await Promise.all(Array.from({ length: c }, (_, i) => executeDelivery(claims[i]!, deps)))
    }
    await env.receiver.reset()
    env.cpu.start()
    const started = performance.now()
    await Promise.all(Array.from({ length: c }, (_, i) => worker(i)))
    const ms = performance.now() - started
    const cpu = env.cpu.stop()
    await env.receiver.waitFor(total, 5_000)
    return { perSec: (total / ms) * 1000, ms, failed, cpu }
  } finally {
    await transport.close()
  }
}

async function ceilingScenario(env: Env) {
  const total = scaled(20_000, 500)
  const c = cfg.concurrency
  const r = await ceilingRun(env, total, c)
  if (r.failed > 0) throw new Error(`${r.failed} ceiling requests did not complete`)
  shared.ceilingPerSec = r.perSec
  return {
    metrics: {
      requests: total,
      concurrency: c,
      ms: Math.round(r.ms),
      requests_per_sec: Math.round(r.perSec),
      cpu: r.cpu,
    },
    rows: [
      {
        metric: 'requests/s (HTTP client stack, no database)',
        value: String(Math.round(r.perSec)),
        target: '—',
        pass: null,
      },
    ],
  }
}

// ---------------------------------------------------------------------------------------------
// 2. drain (+ 5. footprint + 6. replay on the same data)

/**
 * `sealed`: the same drain with the ledger sealer running at its default interval (the hash
 * chain and signed checkpoints on), sampling how far sealing lags behind the writers.
 */
async function drainScenario(env: Env, variant: 'plain' | 'sealed' | 'plain-after' = 'plain') {
  const bdb = await freshDatabase(env, `bench_drain_${variant.replace('-', '_')}`)
  if (variant === 'plain') shared.drain = bdb
  const { db, url } = bdb
  const total = cfg.drainEvents * cfg.endpoints
  await createEndpoints(
    env,
    db,
    Array.from({ length: cfg.endpoints }, (_, i) => ({
      owner_id: OWNER,
      url: env.receiver.url(`/ep/${i}`),
    })),
  )
  const pubStarted = performance.now()
  for (let i = 0; i < cfg.drainEvents; i++) await publish(db, OWNER, eventId())
  const publishMs = performance.now() - pubStarted

  const transport = newTransport(env)
  const { dispatcher, notifier } = newDispatcher(env, db, url, transport, 'bench-drain')
  try {
    const fanStarted = performance.now()
    const fan = await dispatcher.fanoutOnce()
    const fanoutMs = performance.now() - fanStarted
    if (fan.enqueued !== total)
      throw new Error(`fan-out enqueued ${fan.enqueued}, expected ${total}`)

    if (STATS) {
      await sql`create extension if not exists pg_stat_statements`.execute(db)
      await sql`select pg_stat_statements_reset()`.execute(db)
    }
    await env.receiver.reset()
    env.cpu.start()
    const loopDelay = monitorEventLoopDelay({ resolution: 5 })
    loopDelay.enable()
    const profiler = PROFILE ? await startProfile() : null
    const started = performance.now()
    const sealer =
      variant === 'sealed'
        ? new LedgerSealerLoop({ db, key: env.ledgerKey, clock: systemClock, intervalMs: CHECKPOINT_INTERVAL_MS })
        : null
    const lag = { maxRows: 0, samples: 0 }
    const sampler = sealer
      ? setInterval(() => {
          void ledgerSealState(db).then((st) => {
            lag.samples++
            lag.maxRows = Math.max(lag.maxRows, Number(st.latestPosition ?? 0) - Number(st.sealedPosition ?? 0))
          })
        }, 250)
      : null
    sealer?.start()
    await dispatcher.start()
    await env.receiver.waitFor(total, QUICK ? 60_000 : 300_000)
    await waitCompleted(db, total, 30_000)
    const wallMs = performance.now() - started
    if (sampler) clearInterval(sampler)
    // How long after the last settle until every row is sealed (at most one interval, plus the seal).
    const sealStarted = performance.now()
    if (sealer) await sealer.stop()
    const catchUpMs = performance.now() - sealStarted
    loopDelay.disable()
    await profiler?.stop(path.join(ROOT, 'bench-results', 'drain.cpuprofile'))
    const cpu = env.cpu.stop()
    await dispatcher.stop()

    if (STATS) {
      const top = (
        await sql<{
          calls: string
          total_ms: number
          mean_ms: number
          plan_ms: number
          rows: string
          query: string
        }>`
          select calls, round(total_exec_time::numeric, 1)::float8 as total_ms, round(mean_exec_time::numeric, 3)::float8 as mean_ms,
                 round(mean_plan_time::numeric, 3)::float8 as plan_ms,
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
    const states = await countStates(db)
    if (states['completed'] !== total)
      throw new Error(`states after drain: ${JSON.stringify(states)}`)
    const { count: received } = await env.receiver.dump()
    if (received !== total)
      throw new Error(`receiver saw ${received} requests for ${total} deliveries`)

    const span = (
      await sql<{
        first_claim: Date
        last_settle: Date
        claims: string
        settles: string
        busy: string
      }>`
        select min(occurred_at) filter (where kind = 'delivery.claimed') as first_claim,
               max(occurred_at) filter (where kind = 'delivery.completed') as last_settle,
               count(distinct occurred_at) filter (where kind = 'delivery.claimed') as claims,
               count(distinct occurred_at) filter (where kind = 'delivery.completed') as settles,
               count(*) filter (where kind = 'delivery.lease_busy') as busy
        from ledger
      `.execute(db)
    ).rows[0]!
    const cycle = await cycleBreakdown(db)
    const spanMs = Math.max(1, span.last_settle.getTime() - span.first_claim.getTime())
    const perSec = (total / spanMs) * 1000
    // The machine is shared and noisy: measure the ceiling again right after the drain and
    // divide by the mean of the two, so both sides of the ratio saw the same conditions.
    const before = shared.ceilingPerSec ?? NaN
    const after = (await ceilingRun(env, scaled(20_000, 500), cfg.concurrency)).perSec
    const ceiling = Number.isNaN(before) ? after : (before + after) / 2
    const ratio = perSec / ceiling
    if (variant === 'plain') shared.drainPerSec = perSec
    if (variant === 'sealed') {
      shared.sealedPerSec = perSec
      const state = await ledgerSealState(db)
      return {
        metrics: {
          deliveries: total,
          deliveries_per_sec: Math.round(perSec),
          checkpoint_interval_ms: CHECKPOINT_INTERVAL_MS,
          checkpoints: state.checkpoints,
          max_lag_rows: lag.maxRows,
          lag_samples: lag.samples,
          sealed_after_last_settle_ms: Math.round(catchUpMs),
          cpu,
        },
        rows: [
          { metric: 'deliveries/s with the chain on (sealer every 10 s)', value: String(Math.round(perSec)), target: '—', pass: null },
          { metric: 'sealing lag behind the writers, max rows', value: String(lag.maxRows), target: '—', pass: null },
          { metric: 'all sealed after the last settle (ms)', value: String(Math.round(catchUpMs)), target: '—', pass: null },
        ],
      }
    }
    if (variant === 'plain-after') {
      // The chain-on drain ran between two chain-off drains: compare it with their mean, so
      // warm-up and machine noise fall on both sides.
      const off = ((shared.drainPerSec ?? NaN) + perSec) / 2
      const ratio = (shared.sealedPerSec ?? NaN) / off
      return {
        metrics: { deliveries: total, deliveries_per_sec: Math.round(perSec), chain_off_mean_per_sec: Math.round(off), chain_on_over_off: round(ratio, 3) },
        rows: [
          { metric: 'deliveries/s, chain off again (after the chain-on drain)', value: String(Math.round(perSec)), target: '—', pass: null },
          { metric: 'drain chain on ÷ off (mean of the off drains before and after)', value: round(ratio, 2).toFixed(2), target: '≥ 0.95', pass: ratio >= 0.95 },
        ],
      }
    }
    return {
      metrics: {
        deliveries: total,
        endpoints: cfg.endpoints,
        concurrency: cfg.concurrency,
        pool: POOL_SIZE,
        publish_ms: Math.round(publishMs),
        fanout_ms: Math.round(fanoutMs),
        first_claim_to_last_settle_ms: spanMs,
        wall_ms: Math.round(wallMs),
        deliveries_per_sec: Math.round(perSec),
        ceiling_before_per_sec: Math.round(before),
        ceiling_after_per_sec: Math.round(after),
        ceiling_per_sec: Math.round(ceiling),
        ratio_to_ceiling: round(ratio, 3),
        claim_transactions: Number(span.claims),
        avg_claim_batch: round(total / Number(span.claims), 1),
        settle_transactions: Number(span.settles),
        avg_settle_batch: round(total / Number(span.settles), 1),
        lease_busy_snoozes: Number(span.busy),
        cycle_median_ms: cycle,
        event_loop_delay_ms: {
          p50: round(loopDelay.percentile(50) / 1e6, 1),
          p99: round(loopDelay.percentile(99) / 1e6, 1),
        },
        cpu,
        cpu_ms_per_delivery: round(
          (cpu['main_ms']! + cpu['receiver_ms']! + cpu['postgres_ms']!) / total,
          3,
        ),
      },
      rows: [
        {
          metric: 'ceiling requests/s, after the drain',
          value: String(Math.round(after)),
          target: '—',
          pass: null,
        },
        {
          metric: 'deliveries/s (first claim → last settle)',
          value: String(Math.round(perSec)),
          target: `≥ ${targets.drainPerSec}`,
          pass: perSec >= targets.drainPerSec,
        },
        {
          metric: 'drain ÷ ceiling (mean of before and after)',
          value: round(ratio, 2).toFixed(2),
          target: `≥ ${targets.drainRatio}`,
          pass: ratio >= targets.drainRatio,
        },
      ],
    }
  } finally {
    await dispatcher.stop()
    await notifier.close()
    await transport.close()
    if (variant !== 'plain') await bdb.close()
  }
}

/**
 * Where one endpoint's cycle goes, from the ledger (medians, ms): claim → POST start (the claim
 * transaction and the launch), the POST, POST end → settle (batching), settle → the endpoint's
 * next claim (the settle transaction and the producer's next pass).
 */
async function cycleBreakdown(db: Db): Promise<Record<string, number>> {
  const r = (
    await sql<Record<string, number>>`
      with c as (
        select l.delivery_id, l.endpoint_id,
          max(l.occurred_at) filter (where l.kind = 'delivery.claimed') as claimed,
          max((l.payload->>'started_at')::timestamptz) filter (where l.kind = 'delivery.attempted') as started,
          max((l.payload->>'duration_ms')::int) filter (where l.kind = 'delivery.attempted') as post_ms,
          max(l.occurred_at) filter (where l.kind = 'delivery.completed') as settled
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

async function footprintScenario() {
  const bdb = shared.drain
  if (!bdb) throw new Error('needs the drain scenario')
  const { db } = bdb
  const sizes = (
    await sql<{ relname: string; bytes: string; heap: string }>`
      select c.relname, pg_total_relation_size(c.oid) as bytes, pg_relation_size(c.oid) as heap
      from pg_class c
      where c.relname in ('ledger', 'deliveries', 'delivery_attempts', 'events', 'endpoints') and c.relkind = 'r'
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
        join pg_namespace n on n.oid = c.relnamespace and n.nspname = 'public'
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

async function replayScenario() {
  const bdb = shared.drain
  if (!bdb) throw new Error('needs the drain scenario')
  if (argv.includes('--replay-phases'))
    log(`replay phases (ms): ${JSON.stringify(await replayPhases(bdb.db))}`)
  // Memory: the process's RSS sampled while the replay runs, above where it started (the
  // 1M-delivery figure comes from scripts/bench-replay-phases.ts --deliveries=1000000).
  const rssBefore = process.memoryUsage().rss
  let rssPeak = rssBefore
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, process.memoryUsage().rss)), 20)
  const started = performance.now()
  const report = await replayClean(bdb.db, 'replay').finally(() => clearInterval(sampler))
  const ms = performance.now() - started
  rssPeak = Math.max(rssPeak, process.memoryUsage().rss)
  const perSec = (report.ledgerRows / ms) * 1000
  const rssGrowthMb = (rssPeak - rssBefore) / 1024 / 1024
  return {
    metrics: {
      ledger_rows: report.ledgerRows,
      deliveries: report.deliveries,
      attempts: report.attempts,
      ms: Math.round(ms),
      rows_per_sec: Math.round(perSec),
      differences: report.differencesTotal,
      peak_held: report.peakHeld,
      peak_buffered_rows: report.peakBufferedRows,
      rss_before_mb: Math.round(rssBefore / 1024 / 1024),
      rss_growth_mb: round(rssGrowthMb, 1),
    },
    rows: [
      {
        metric: 'replay memory: RSS growth (MB) while replaying the drain',
        value: round(rssGrowthMb, 1).toFixed(1),
        target: '—',
        pass: null,
      },
      {
        metric: 'ledger rows/s (replay-verify of the drain)',
        value: String(Math.round(perSec)),
        target: `≥ ${targets.replayRowsPerSec}`,
        pass: perSec >= targets.replayRowsPerSec,
      },
      {
        metric: 'replay differences',
        value: String(report.differencesTotal),
        target: '0',
        pass: report.differencesTotal === 0,
      },
    ],
  }
}

// ---------------------------------------------------------------------------------------------
// 3. latency: publish → receiver arrival at a steady rate

async function latencyScenario(env: Env) {
  const bdb = await freshDatabase(env, 'bench_latency')
  const { db, url } = bdb
  // The publisher is the application: its own small pool, as the API process would have.
  const pubDb = createDb(new pg.Pool({ connectionString: url, max: POOL_SIZE }))
  const n = cfg.latencyEndpoints
  // One endpoint per tenant, so each event goes to exactly one endpoint: 200 events/s is 200
  // deliveries/s, 4/s per endpoint.
  await createEndpoints(
    env,
    db,
    Array.from({ length: n }, (_, i) => ({
      owner_id: `tenant_${i}`,
      url: env.receiver.url(`/ep/${i}`),
    })),
  )
  const transport = newTransport(env)
  const { dispatcher, notifier } = newDispatcher(env, db, url, transport, 'bench-latency')
  const publishedAt = new Map<string, number>()
  const publishErrors: unknown[] = []
  const run = async (prefix: string, seconds: number, record: boolean): Promise<number> => {
    const total = Math.max(1, Math.round(cfg.latencyRate * seconds))
    const interval = 1000 / cfg.latencyRate
    const pending: Promise<void>[] = []
    const t0 = performance.now()
    for (let k = 0; k < total; k++) {
      const due = t0 + k * interval
      const wait = due - performance.now()
      if (wait > 1) await sleep(wait)
      const id = `${prefix}_${eventId()}`
      if (record) publishedAt.set(id, wall())
      pending.push(
        publish(pubDb, `tenant_${k % n}`, id).catch((err) => void publishErrors.push(err)),
      )
    }
    await Promise.all(pending)
    return total
  }
  try {
    await dispatcher.start()
    const skew = await env.receiver.clockSkew()
    // Warm-up (not recorded): sockets, JIT, caches.
    await env.receiver.reset()
    const warm = await run('warm', QUICK ? 0.5 : 2, false)
    await env.receiver.waitFor(warm, 30_000)
    await env.receiver.reset(true)
    const sendStarted = performance.now()
    const total = await run('lat', cfg.latencySeconds, true)
    const sendSeconds = (performance.now() - sendStarted) / 1000
    if (publishErrors.length > 0) throw publishErrors[0]
    await env.receiver.waitFor(total, 60_000)
    const { arrivals } = await env.receiver.dump()
    await waitCompleted(db, total + warm, 30_000)
    await dispatcher.stop()
    const seen = new Set<string>()
    let duplicates = 0
    const latencies: number[] = []
    for (const [id, , at] of arrivals) {
      if (seen.has(id)) duplicates++
      seen.add(id)
      const p = publishedAt.get(id)
      if (p !== undefined) latencies.push(at - p)
    }
    if (latencies.length !== total)
      throw new Error(`${latencies.length} arrivals matched of ${total} published`)
    if (duplicates > 0) throw new Error(`${duplicates} duplicate arrivals`)
    latencies.sort((a, b) => a - b)
    const p50 = percentile(latencies, 50)
    const p99 = percentile(latencies, 99)
    const max = latencies[latencies.length - 1]!
    const replay = await replayClean(db, 'latency')
    return {
      metrics: {
        events: total,
        endpoints: n,
        rate_per_sec: cfg.latencyRate,
        achieved_rate_per_sec: round(total / sendSeconds, 1),
        seconds: cfg.latencySeconds,
        p50_ms: round(p50),
        p90_ms: round(percentile(latencies, 90)),
        p99_ms: round(p99),
        max_ms: round(max),
        min_ms: round(latencies[0]!),
        clock_skew_ms: skew.skewMs,
        ipc_rtt_ms: skew.rttMs,
        replay_differences: replay.differencesTotal,
      },
      rows: [
        {
          metric: 'publish → arrival p50 (ms)',
          value: round(p50).toFixed(1),
          target: `≤ ${targets.latencyP50}`,
          pass: p50 <= targets.latencyP50,
        },
        {
          metric: 'publish → arrival p99 (ms)',
          value: round(p99).toFixed(1),
          target: `≤ ${targets.latencyP99}`,
          pass: p99 <= targets.latencyP99,
        },
        {
          metric: 'publish → arrival max (ms)',
          value: round(max).toFixed(1),
          target: '—',
          pass: null,
        },
      ],
    }
  } finally {
    await dispatcher.stop()
    await notifier.close()
    await transport.close()
    await pubDb.destroy()
    await bdb.close()
  }
}

// ---------------------------------------------------------------------------------------------
// 4. claim at scale

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
    await sql`
      insert into deliveries (id, owner_id, endpoint_id, event_id, event_type, state, run, run_started_at,
        attempts, next_attempt_at, claimed_by, lease_until, last_status, last_error, created_at, updated_at)
      select gen_random_uuid(), ${OWNER}::text, e.id, 'evt_' || g, ${EVENT_TYPE}::text, ${state}::text, 1, t,
        ${completed ? 1 : 0}::int, ${completed ? sql`null` : sql`t`}, null, null, ${completed ? sql`204` : sql`null`}, null, t, t
      from generate_series(${from}::int, ${to}::int) g
      cross join (select id from endpoints order by created_at, id) e,
      lateral (select ${base}::timestamptz - interval '2 days' + g * interval '1 ms' as t) x
    `.execute(trx)
    // The claim reads the queue heads, which the write primitive keeps; these rows bypassed it.
    await endpointQueueRebuildAll(trx)
  })
  await sql`vacuum analyze deliveries`.execute(db)
  await sql`vacuum analyze events`.execute(db)
}

async function claimScenario(env: Env) {
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
    // Each claim runs at a later `now` than the last by more than a lease, so every endpoint is
    // leasable again and each claim takes fresh rows (the previous claims' rows stay `running`).
    const nextNow = () => new Date(base.getTime() + run++ * (JOB_TIMEOUT_MS + 1_000))
    const measure = async (): Promise<{ medianMs: number; runs: number[]; claimed: number[] }> => {
      await deliveryClaim(db, { now: nextNow(), limit: cfg.claimLimit, actor: 'worker:bench' }) // warm-up
      const runs: number[] = []
      const claimed: number[] = []
      for (let i = 0; i < cfg.claimRuns; i++) {
        const now = nextNow()
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
    let t = performance.now()
    await generateRows(db, { from: 1, events: completedEvents, state: 'completed', base })
    await generateRows(db, {
      from: completedEvents + 1,
      events: smallEvents,
      state: 'pending',
      base,
    })
    const genSmallMs = performance.now() - t
    const small = await measure()
    t = performance.now()
    await generateRows(db, {
      from: completedEvents + smallEvents + 1,
      events: largeEvents - smallEvents,
      state: 'pending',
      base,
    })
    const genLargeMs = performance.now() - t
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

// ---------------------------------------------------------------------------------------------
// 7. fan-out: one event to 1,000 endpoints

async function fanoutScenario(env: Env) {
  const bdb = await freshDatabase(env, 'bench_fanout')
  const { db, url } = bdb
  const n = cfg.fanoutEndpoints
  const pubDb = createDb(new pg.Pool({ connectionString: url, max: 2 }))
  await createEndpoints(
    env,
    db,
    Array.from({ length: n }, (_, i) => ({ owner_id: OWNER, url: env.receiver.url(`/ep/${i}`) })),
  )
  const transport = newTransport(env)
  const { dispatcher, notifier } = newDispatcher(env, db, url, transport, 'bench-fanout')
  // Our own LISTEN: the fan-out's NOTIFY arrives once its transaction (deliveries + ledger) commits.
  const watcher = createPgNotifier(url)
  let onEnqueued: (() => void) | null = null
  await watcher.listen(DELIVERIES_CHANNEL, () => onEnqueued?.())
  try {
    await dispatcher.start()
    await env.receiver.reset()
    const runs: number[] = []
    for (let r = 0; r < cfg.fanoutRuns; r++) {
      const id = eventId()
      const enqueued = new Promise<number>(
        (resolve) => (onEnqueued = () => resolve(performance.now())),
      )
      const t0 = performance.now()
      await publish(pubDb, OWNER, id)
      const at = await withTimeout(enqueued, 30_000, 'fan-out NOTIFY')
      onEnqueued = null
      runs.push(round(at - t0, 1))
      const count = Number(
        (
          await sql<{
            n: string
          }>`select count(*) as n from deliveries where event_id = ${id}`.execute(db)
        ).rows[0]!.n,
      )
      if (count !== n)
        throw new Error(`fan-out of ${id} enqueued ${count} deliveries, expected ${n}`)
      // Let this event's deliveries drain before the next run, so runs do not overlap.
      await env.receiver.waitFor((r + 1) * n, 60_000)
      await waitCompleted(db, (r + 1) * n, 30_000)
    }
    await dispatcher.stop()
    const replay = await replayClean(db, 'fan-out')
    const med = median(runs)
    const max = Math.max(...runs)
    return {
      metrics: {
        endpoints: n,
        runs_ms: runs,
        median_ms: med,
        max_ms: max,
        replay_differences: replay.differencesTotal,
      },
      rows: [
        {
          metric: `fan-out 1 event → ${n.toLocaleString('en')} deliveries enqueued (median ms)`,
          value: med.toFixed(1),
          target: `≤ ${targets.fanoutMs}`,
          pass: med <= targets.fanoutMs,
        },
      ],
    }
  } finally {
    await dispatcher.stop()
    await watcher.close()
    await notifier.close()
    await transport.close()
    await pubDb.destroy()
    await bdb.close()
  }
}

// ---------------------------------------------------------------------------------------------
// Main

async function startProfile(): Promise<{ stop(file: string): Promise<void> }> {
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

function postmasterPid(clusterDir: string): number {
  return Number(readFileSync(path.join(clusterDir, 'postmaster.pid'), 'utf8').split('\n')[0])
}

function printTable(): void {
  const lines: string[][] = [['scenario', 'metric', 'value', 'target', 'ok']]
  for (const r of results) {
    if (!r.ok) {
      lines.push([r.scenario, 'ERROR', (r.error ?? '').split('\n')[0]!.slice(0, 80), '', 'ERROR'])
      continue
    }
    for (const row of r.rows) {
      lines.push([
        r.scenario,
        row.metric,
        row.value,
        row.target,
        row.pass === null ? '' : row.pass ? 'yes' : 'MISS',
      ])
    }
  }
  const widths = lines[0]!.map((_, c) => Math.max(...lines.map((l) => l[c]!.length)))
  const fmt = (l: string[]) =>
    '| ' +
    l
      .map((cell, c) => (c === 2 ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!)))
      .join(' | ') +
    ' |'
  process.stdout.write('\n' + fmt(lines[0]!) + '\n')
  process.stdout.write(
    '|' +
      widths
        .map((w, c) => (c === 2 ? '-'.repeat(w + 1) + ':' : ':' + '-'.repeat(w + 1)))
        .join('|') +
      '|\n',
  )
  for (const l of lines.slice(1)) process.stdout.write(fmt(l) + '\n')
}

async function main(): Promise<number> {
  const benchStarted = performance.now()
  const dataDir = mkdtempSync(path.join(tmpdir(), 'hookledger-bench-'))
  let embedded: EmbeddedDatabase | null = null
  let receiver: Receiver | null = null
  let pgVersion = ''
  try {
    log(`${QUICK ? 'quick (1/50 scale)' : 'full'} run; PostgreSQL under ${dataDir}`)
    mkdirSync(path.join(ROOT, 'bench-results'), { recursive: true })
    if (EXPLAIN_MS) rmSync(path.join(ROOT, 'bench-results', 'explain.log'), { force: true })
    embedded = await openEmbeddedDatabase({
      dataDir,
      settings: PG_SETTINGS,
      ...(EXPLAIN_MS
        ? {
            onLog: (line: string) =>
              void appendFileSync(path.join(ROOT, 'bench-results', 'explain.log'), line),
          }
        : {}),
    })
    receiver = await Receiver.start()
    const admin = new pg.Client({ connectionString: embedded.url('postgres') })
    await admin.connect()
    pgVersion = String((await admin.query('show server_version')).rows[0]?.server_version ?? '')
    const durability: Record<string, string> = {}
    for (const name of [
      'fsync',
      'synchronous_commit',
      'full_page_writes',
      'shared_buffers',
      'autovacuum_naptime',
    ]) {
      durability[name] = String((await admin.query(`show ${name}`)).rows[0]?.[name])
    }
    await admin.end()
    log(
      `PostgreSQL ${pgVersion} ${JSON.stringify(durability)}; receiver pid ${receiver.pid} on :${receiver.port}`,
    )
    const env: Env = {
      pg: embedded,
      receiver,
      secretBox: createSecretBox(generateMasterKey()),
      catalog: createEventCatalog(),
      policy: createEgressPolicy({ allow: ['127.0.0.0/8'] }),
      ledgerKey: parseLedgerSigningKey(generateLedgerSigningKey().secret),
      cpu: new CpuMeter(postmasterPid(embedded.clusterDir), receiver.pid),
    }

    await scenario('ceiling', () => ceilingScenario(env))
    await scenario('drain', () => drainScenario(env))
    await scenario('footprint', () => footprintScenario())
    await scenario('replay', () => replayScenario())
    await scenario('seal', () => sealScenario(shared.drain!.db, env.ledgerKey, QUICK))
    await shared.drain?.close()
    await scenario('drain-sealed', () => drainScenario(env, 'sealed'))
    // At 1/50 scale the on ÷ off ratio is noise: the quick run keeps the chain-on drain (it
    // exercises the sealer) and skips the second chain-off one.
    if (!QUICK) await scenario('drain-off', () => drainScenario(env, 'plain-after'))
    await scenario('drain-v1a', () =>
      drainV1aScenario({
        quick: QUICK, owner: OWNER, endpoints: cfg.endpoints, events: cfg.drainEvents, secretBox: env.secretBox, receiver: env.receiver,
        freshDatabase: (name) => freshDatabase(env, name),
        publish,
        newDispatcher: (db, url, workerId) => {
          const transport = newTransport(env)
          const { dispatcher, notifier } = newDispatcher(env, db, url, transport, workerId)
          return { dispatcher, close: async () => { await dispatcher.stop(); await notifier.close(); await transport.close() } }
        },
      }),
    )
    await scenario('latency', () => latencyScenario(env))
    await scenario('claim', () => claimScenario(env))
    await scenario('fanout', () => fanoutScenario(env))

    const totalSeconds = round((performance.now() - benchStarted) / 1000, 1)
    printTable()
    process.stdout.write(
      `\n${QUICK ? 'quick' : 'full'} run: ${totalSeconds} s total, machine load ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}\n`,
    )
    if (QUICK) {
      process.stdout.write(
        'quick = 1/50 scale, a smoke test: its values are not comparable with the targets (full run).\n',
      )
    }
    mkdirSync(path.dirname(RESULTS_FILE), { recursive: true })
    const report =
      JSON.stringify(
        {
          at: new Date().toISOString(),
          mode: QUICK ? 'quick' : 'full',
          scale: SCALE,
          seconds: totalSeconds,
          machine: {
            cpus: availableParallelism(),
            model: cpus()[0]?.model ?? '',
            node: process.version,
            load: loadavg(),
          },
          postgres: { version: pgVersion, settings: { ...PG_SETTINGS, ...durability } },
          config: cfg,
          targets,
          results,
        },
        null,
        2,
      ) + '\n'
    // latest.json is whichever ran last; full.json / quick.json keep each mode's last complete
    // run, so the quick run of `npm test` does not hide the last full one.
    writeFileSync(RESULTS_FILE, report)
    if (!ONLY) {
      writeFileSync(
        path.join(path.dirname(RESULTS_FILE), `${QUICK ? 'quick' : 'full'}.json`),
        report,
      )
    }
    return results.every((r) => r.ok) ? 0 : 1
  } finally {
    await receiver?.stop().catch(() => {})
    await embedded?.stop().catch(() => {})
    if (embedded) rmSync(embedded.clusterDir, { recursive: true, force: true })
    rmSync(dataDir, { recursive: true, force: true })
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(
      `[bench] fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    )
    process.exit(1)
  },
)
