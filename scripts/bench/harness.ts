/**
 * The bench harness: one embedded PostgreSQL and one receiver process for the whole run, a
 * fresh migrated database per scenario, timing and error capture per scenario, one JSON line
 * per scenario on stdout as it finishes, the table at the end, and bench-results/*.json.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { createEgressPolicy, createEventCatalog, createSecretBox, generateMasterKey } from '@hookledger/core'
import { generateLedgerSigningKey, parseLedgerSigningKey, type LedgerSigningKey } from '@hookledger/ledger'
import { createDb, DEFAULT_DB_SCHEMA, installRoleNames, migrateToLatest, roleUrl, type Db } from '@hookledger/store'
import { openEmbeddedDatabase, type EmbeddedDatabase } from '@hookledger/embedded'
import { CpuMeter } from './cpu-meter.js'
import { pinBenchProcesses } from './cpu-pinning.js'
import { Receiver } from './receiver.js'
import { CHARTS_DIR, EXPLAIN_MS, ONLY, PREPARE, PG_SETTINGS, POOL_SIZE, QUICK, RESULTS_DIR, ROOT, SCALE, cfg, targets } from './settings.js'
import { writeBenchCharts } from './charts/bench-charts.js'
import { Progress, log, round } from './util.js'

export interface Env {
  readonly pg: EmbeddedDatabase
  readonly receiver: Receiver
  readonly secretBox: ReturnType<typeof createSecretBox>
  /** The master key behind `secretBox`, for a `hookledger` process the bench starts. */
  readonly masterKey: Uint8Array
  readonly catalog: ReturnType<typeof createEventCatalog>
  readonly policy: ReturnType<typeof createEgressPolicy>
  readonly cpu: CpuMeter
  readonly ledgerKey: LedgerSigningKey
}

export interface BenchDb {
  readonly name: string
  readonly url: string
  /** The service's own role (`hookledger_<name>_service`), as `serve` connects: what is measured. */
  readonly db: Db
  /** `db`'s URL (the service role's; the superuser's when not migrated). */
  readonly serviceUrl: string
  /** The cluster's superuser on the same database: synthetic history, statistics, diagnostics. */
  readonly admin: Db
  close(): Promise<void>
}

/** The bench's login roles' passwords (a throwaway cluster). */
const BENCH_ROLE_PASSWORDS = { service: 'bench-service', publisher: 'bench-publisher', reader: 'bench-reader' } as const

/**
 * A pool on `url` for the bench. Its idle clients' errors are logged, not thrown: a pool's `end`
 * resolves before its sockets close, so the cluster's shutdown can still reach a client as 57P01,
 * and a pool without a listener would end the whole run there.
 */
export function benchDb(url: string, max: number): Db {
  const pool = new pg.Pool({ connectionString: url, max })
  pool.on('error', (err: Error & { code?: string }) => {
    if (err.code !== '57P01') log(`idle database client: ${err.message}`)
  })
  return createDb(pool, { prepare: PREPARE })
}

/** A new database `name` in the bench's cluster, migrated with the real migrations. */
export async function freshDatabase(env: Env, name: string, poolSize = POOL_SIZE, migrate = true): Promise<BenchDb> {
  const cluster = new pg.Client({ connectionString: env.pg.url('postgres') })
  await cluster.connect()
  try {
    await cluster.query(`drop database if exists ${name}`)
    await cluster.query(`create database ${name}`)
  } finally {
    await cluster.end()
  }
  const url = env.pg.url(name)
  const admin = benchDb(url, 2)
  if (!migrate) return { name, url, serviceUrl: url, db: admin, admin, close: () => admin.destroy() }
  await migrateToLatest(admin, undefined, { passwords: BENCH_ROLE_PASSWORDS })
  const service = roleUrl(url, installRoleNames(DEFAULT_DB_SCHEMA, name).service, BENCH_ROLE_PASSWORDS.service)
  const db = benchDb(service, poolSize)
  return { name, url, serviceUrl: service, db, admin, close: async () => (await db.destroy(), await admin.destroy()) }
}

/** One line of the table: a figure, its target (or '—') and whether it is met (null: no target). */
export interface Row {
  readonly metric: string
  readonly value: string
  readonly target: string
  readonly pass: boolean | null
}

export interface ScenarioOutput {
  metrics: Record<string, unknown>
  rows: Row[]
}

export interface ScenarioContext {
  readonly env: Env
  readonly progress: Progress
}

export type Scenario = (ctx: ScenarioContext) => Promise<ScenarioOutput>

interface ScenarioResult {
  scenario: string
  ok: boolean
  error?: string
  seconds: number
  metrics: Record<string, unknown>
  rows: Row[]
}

const results: ScenarioResult[] = []

/** Runs one scenario (unless `--only` leaves it out), records its result or its error. */
export async function runScenario(env: Env, name: string, run: Scenario): Promise<void> {
  if (ONLY && !ONLY.includes(name)) return
  log(`${name}: start`)
  const started = performance.now()
  const progress = new Progress(name)
  const seconds = () => round((performance.now() - started) / 1000, 2)
  let result: ScenarioResult
  try {
    const { metrics, rows } = await run({ env, progress })
    result = { scenario: name, ok: true, seconds: seconds(), metrics, rows }
  } catch (err) {
    const error = err instanceof Error ? (err.stack ?? err.message) : String(err)
    result = { scenario: name, ok: false, error, seconds: seconds(), metrics: {}, rows: [] }
    log(`${name}: ERROR ${error}`)
  } finally {
    progress.stop()
  }
  results.push(result)
  const { rows: _rows, ...json } = result
  process.stdout.write(JSON.stringify({ bench: json.scenario, ...json }) + '\n')
}

function printTable(): void {
  const lines: string[][] = [['scenario', 'metric', 'value', 'target', 'ok']]
  for (const r of results) {
    if (!r.ok) {
      lines.push([r.scenario, 'ERROR', (r.error ?? '').split('\n')[0]!.slice(0, 80), '', 'ERROR'])
      continue
    }
    for (const row of r.rows) {
      lines.push([r.scenario, row.metric, row.value, row.target, row.pass === null ? '' : row.pass ? 'yes' : 'MISS'])
    }
  }
  const widths = lines[0]!.map((_, c) => Math.max(...lines.map((l) => l[c]!.length)))
  const fmt = (l: string[]) =>
    '| ' + l.map((cell, c) => (c === 2 ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!))).join(' | ') + ' |'
  process.stdout.write('\n' + fmt(lines[0]!) + '\n')
  process.stdout.write(
    '|' + widths.map((w, c) => (c === 2 ? '-'.repeat(w + 1) + ':' : ':' + '-'.repeat(w + 1))).join('|') + '|\n',
  )
  for (const l of lines.slice(1)) process.stdout.write(fmt(l) + '\n')
}

/** Where `--explain` leaves the cluster's log (auto_explain's plans) when the run ends. */
const EXPLAIN_LOG = path.join(RESULTS_DIR, 'explain.log')

/**
 * Starts the cluster and the receiver, runs `body` (the scenarios), prints the table and
 * writes the results; always stops and removes what it started. Resolves with the exit code:
 * non-zero when a scenario errored, never because one was slow.
 */
export async function benchRun(body: (env: Env) => Promise<void>): Promise<number> {
  const benchStarted = performance.now()
  const dataDir = mkdtempSync(path.join(tmpdir(), 'hookledger-bench-'))
  let embedded: EmbeddedDatabase | null = null
  let receiver: Receiver | null = null
  try {
    log(`${QUICK ? 'quick (1/50 scale)' : 'full'} run; PostgreSQL under ${dataDir}`)
    mkdirSync(RESULTS_DIR, { recursive: true })
    if (EXPLAIN_MS) rmSync(EXPLAIN_LOG, { force: true })
    embedded = await openEmbeddedDatabase({ dataDir, settings: PG_SETTINGS })
    receiver = await Receiver.start()
    const admin = new pg.Client({ connectionString: embedded.url('postgres') })
    await admin.connect()
    const pgVersion = String((await admin.query('show server_version')).rows[0]?.server_version ?? '')
    const durability: Record<string, string> = {}
    for (const name of ['fsync', 'synchronous_commit', 'full_page_writes', 'shared_buffers', 'autovacuum_naptime']) {
      durability[name] = String((await admin.query(`show ${name}`)).rows[0]?.[name])
    }
    await admin.end()
    log(`PostgreSQL ${pgVersion} ${JSON.stringify(durability)}; receiver pid ${receiver.pid} on :${receiver.port}`)
    const postmasterPid = Number(readFileSync(path.join(embedded.clusterDir, 'postmaster.pid'), 'utf8').split('\n')[0])
    const pinning = pinBenchProcesses(postmasterPid, receiver.pid)
    log(pinning.detail)
    const masterKey = generateMasterKey()
    const env: Env = {
      pg: embedded,
      receiver,
      secretBox: createSecretBox(masterKey),
      masterKey,
      catalog: createEventCatalog(),
      policy: createEgressPolicy({ allow: ['127.0.0.0/8'] }),
      ledgerKey: parseLedgerSigningKey(generateLedgerSigningKey().secret),
      cpu: new CpuMeter(postmasterPid, receiver.pid),
    }
    await body(env)

    const totalSeconds = round((performance.now() - benchStarted) / 1000, 1)
    printTable()
    const load = loadavg()
    process.stdout.write(
      `\n${QUICK ? 'quick' : 'full'} run: ${totalSeconds} s total, machine load ${load.map((l) => l.toFixed(2)).join(' ')}\n`,
    )
    if (QUICK) {
      process.stdout.write('quick = 1/50 scale, a smoke test: its values are not comparable with the targets (full run).\n')
    }
    const report =
      JSON.stringify(
        {
          at: new Date().toISOString(),
          mode: QUICK ? 'quick' : 'full',
          scale: SCALE,
          seconds: totalSeconds,
          machine: { cpus: availableParallelism(), model: cpus()[0]?.model ?? '', node: process.version, load, pinning: pinning.detail },
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
    writeFileSync(path.join(RESULTS_DIR, 'latest.json'), report)
    if (!ONLY) writeFileSync(path.join(RESULTS_DIR, `${QUICK ? 'quick' : 'full'}.json`), report)
    const when = `${QUICK ? 'quick' : 'full'} run ${new Date().toISOString().slice(0, 10)}, ${availableParallelism()} cores, load ${load[0]!.toFixed(1)}`
    const charts = writeBenchCharts(results, when, [path.join(RESULTS_DIR, 'charts'), ...(CHARTS_DIR ? [path.resolve(ROOT, CHARTS_DIR)] : [])])
    if (charts.length > 0) process.stderr.write(`[bench] charts: ${charts.map((f) => path.relative(ROOT, f)).join(', ')}\n`)
    return results.every((r) => r.ok) ? 0 : 1
  } finally {
    await receiver?.stop().catch(() => {})
    await embedded?.stop().catch(() => {})
    // auto_explain writes into the cluster's own log, which goes with the cluster.
    if (embedded && EXPLAIN_MS) copyFileSync(path.join(embedded.clusterDir, 'server.log'), EXPLAIN_LOG)
    if (embedded) rmSync(embedded.clusterDir, { recursive: true, force: true })
    rmSync(dataDir, { recursive: true, force: true })
  }
}
