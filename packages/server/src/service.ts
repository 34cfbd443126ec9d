import { hostname } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { sql } from 'kysely'
import type { Logger as Pino } from 'pino'
import {
  classifyDatabaseError,
  createEgressPolicy,
  createEventCatalog,
  createSecretBox,
  type Clock,
} from '@hookledger/core'
import { LogOriginError, logOriginEnsure, type LedgerSigningKey } from '@hookledger/ledger'
import { createApi, createInstrumentRoutes } from '@hookledger/api'
import { createUiRoutes } from '@hookledger/ui'
import type { OpDeps } from '@hookledger/ops'
import {
  apiTokenAny,
  apiTokenCreate,
  createDb,
  createPgNotifier,
  createReadReplica,
  DatabaseClock,
  onHostsOf,
  PrimaryPool,
  primaryHostUrl,
  splitHosts,
  createTableEmbedAdmits,
  fanoutCatalogObserved,
  installRoleNamesOf,
  LOGIN_ROLES,
  migrateToLatest,
  migrationsPending,
  rolePassword,
  roleUrl,
  type LoginRole,
  type Db,
  type EmbedAdmits,
} from '@hookledger/store'
import { openEmbeddedDatabase, type EmbeddedDatabase } from '@hookledger/embedded'
import { DatabaseHealth, Dispatcher, LedgerSealerLoop, WitnessSubmitter, createHttpTransport } from '@hookledger/worker'
import { attemptTimeoutsOf, snoozeBudgetOf, type Config } from './config.js'
import { listenHttp } from './http-listener.js'
import { loggingObserver, startActivitySummary } from './activity-log.js'
import { createReadiness } from './readiness.js'
import { createServiceMetrics, type ServiceMetrics } from './service-metrics.js'
import { catalogFileDeclare } from './catalog-file.js'
import { loadMasterKey } from './key-files.js'
import { createLedgerKeys, sealingLedgerKey, type SigningKeySource } from './ledger-keys.js'
import { StartupError } from './startup-error.js'
export { createLogger } from './logger.js'
import { writeFirstStartToken } from './first-start-token.js'
import { readLedgerKeyRotations } from './ledger-key-rotations-file.js'

/** An open database: Kysely over a small pool, plus what is needed to close it. */
export interface OpenDatabase {
  readonly db: Db
  /** The URL this process connects with (the service role's). */
  readonly url: string
  /** The URL that may migrate (and create roles): DATABASE_URL, or the embedded cluster's account. */
  readonly migrateUrl: string
  /** Each login role's URL (`hookledger database-url --role R`). */
  readonly roleUrls: Readonly<Record<LoginRole, string>>
  /** The service role's URL on the host that is primary now (several hosts: as the pool last found it). */
  readonly currentUrl: () => string
  /** HOOKLEDGER_READ_DATABASE_URL's replica, as the service role; null without one. */
  readonly readDb: Db | null
  /** The database's clock (see store's DatabaseClock): every rule of this process reads it. */
  readonly clock: Clock
  close(): Promise<void>
  /** For an exit that will not wait: stops the embedded PostgreSQL at once if this process is its last user. */
  abandon(): void
}

/**
 * Connects to `DATABASE_URL`, or opens the embedded PostgreSQL under the data dir (reusing it
 * if the service already runs it), creates the `hookledger` database there if needed, and
 * migrates to the latest schema.
 */
export async function openDatabase(
  config: Config,
  log: Pino,
  poolSize = 4,
  options: { waitForDatabase?: { signal: AbortSignal }; onRoleAction?: (line: string) => void } = {},
): Promise<OpenDatabase> {
  let embedded: EmbeddedDatabase | null = null
  let url = config.DATABASE_URL
  if (!url) {
    embedded = await openEmbeddedDatabase({
      dataDir: config.HOOKLEDGER_DATA_DIR,
      onLog: (line) => log.debug({ component: 'postgres' }, line.trim()),
    })
    const admin = new pg.Client({ connectionString: embedded.url('postgres') })
    await admin.connect()
    const exists = await admin.query(`select 1 from pg_database where datname = 'hookledger'`)
    if (exists.rowCount === 0) await admin.query('create database hookledger').catch(() => {})
    await admin.end()
    url = embedded.url('hookledger')
  }
  // Several hosts (a primary and its standbys): everything that needs one connection (the
  // migration, LISTEN) talks to the one that is primary now; the pool finds it again after a
  // promotion (PrimaryPool).
  const hostList = url
  url = await primaryHostUrl(url)
  const schema = config.HOOKLEDGER_DB_SCHEMA
  // Migrate as a privileged role (the migrate URL, else DATABASE_URL or the embedded cluster's
  // own account), then connect as the service role, which owns nothing (the baseline migration).
  const migrateUrl = config.HOOKLEDGER_MIGRATE_URL ? await primaryHostUrl(config.HOOKLEDGER_MIGRATE_URL) : url
  const passwords = installRolePasswords(loadMasterKey(config), schema)
  const { serviceUrl, roleUrls } = await migrateAsOwner({
    migrateUrl, url, schema, passwords, log, embedded: embedded !== null, ...options,
    ...(options.onRoleAction ? { onAction: options.onRoleAction } : {}),
  })
  const poolConfig = { max: poolSize, connectionTimeoutMillis: 10_000 }
  const primaryPool = splitHosts(hostList).length > 1
    ? new PrimaryPool(onHostsOf(serviceUrl, hostList), poolConfig, { onDiscover: (host) => log.info({ host: new URL(host).host }, 'database:primary_found') })
    : null
  const pool = primaryPool ?? new pg.Pool({ connectionString: serviceUrl, ...poolConfig })
  // A connection dropped by the server (restart, failover, shutdown) must never crash the
  // process: an idle one is replaced by the pool on next use, and one checked out fails the
  // query in flight (its unit of work is retried or rescued) — its 'error' event is handled here.
  pool.on('error', (err: Error) => log.debug({ err: err.message }, 'database:idle_connection_error'))
  pool.on('connect', (client: pg.PoolClient) => client.on('error', (err: Error) => log.debug({ err: err.message }, 'database:connection_error')))
  const db = createDb(pool, { schema })
  const pending = await migrationsPending(db).catch(() => [])
  if (pending.length > 0) throw new StartupError(`the database lacks migrations ${pending.join(', ')}: run \`hookledger migrate\` with HOOKLEDGER_MIGRATE_URL set to a role that may create roles`)
  const clock = await DatabaseClock.start(db, { logger: log })
  let readDb: Db | null = null
  if (config.HOOKLEDGER_READ_DATABASE_URL) {
    const readPool = new pg.Pool({ connectionString: onHostsOf(serviceUrl, config.HOOKLEDGER_READ_DATABASE_URL), ...poolConfig })
    readPool.on('error', (err: Error) => log.debug({ err: err.message }, 'database:replica_idle_connection_error'))
    readPool.on('connect', (client: pg.PoolClient) => client.on('error', (err: Error) => log.debug({ err: err.message }, 'database:replica_connection_error')))
    readDb = createDb(readPool, { schema })
  }
  return {
    db,
    readDb,
    url: serviceUrl,
    currentUrl: () => primaryPool?.primaryUrl ?? serviceUrl,
    migrateUrl,
    roleUrls,
    clock,
    close: async () => {
      clock.stop()
      await readDb?.destroy()
      await db.destroy()
      await embedded?.stop()
    },
    abandon: () => embedded?.stopNow(),
  }
}

/** The login roles' passwords of this install, derived from its master key (store's rolePassword). */
export function installRolePasswords(secret: Uint8Array, schema: string): Record<LoginRole, string> {
  return Object.fromEntries(LOGIN_ROLES.map((role) => [role, rolePassword(secret, role, schema)])) as Record<LoginRole, string>
}

/**
 * Migrates over `migrateUrl` when it may (a superuser, a role with CREATEROLE, or the owner):
 * creates the roles with `passwords`, migrates as the owner, grants. Returns the URL the
 * service connects with: the service role's, on the host of `url`. A `url` that is already an
 * unprivileged role (a deployment that hands out only the service's credential, migrating
 * apart) is used as it is.
 */
async function migrateAsOwner(params: {
  migrateUrl: string
  url: string
  schema: string
  passwords: Record<LoginRole, string>
  log: Pino
  /** The embedded default: the publisher role may also create tables in `public`, for an application sharing the cluster (examples/bookings). */
  embedded: boolean
  waitForDatabase?: { signal: AbortSignal }
  onAction?: (line: string) => void
}): Promise<{ serviceUrl: string; roleUrls: Record<LoginRole, string> }> {
  const admin = createDb(new pg.Pool({ connectionString: params.migrateUrl, max: 1, connectionTimeoutMillis: 10_000 }), { schema: params.schema })
  try {
    if (params.waitForDatabase) await untilReachable(admin, params.log, params.waitForDatabase.signal)
    const me = (
      await sql<{ name: string; privileged: boolean }>`
        select current_user as name, (rolsuper or rolcreaterole) as privileged from pg_roles where rolname = current_user
      `.execute(admin)
    ).rows[0]!
    const roles = await installRoleNamesOf(admin, params.schema)
    const roleUrls = Object.fromEntries(LOGIN_ROLES.map((r) => [r, roleUrl(params.url, roles[r], params.passwords[r])])) as Record<LoginRole, string>
    if (!me.privileged) {
      if (params.migrateUrl !== params.url || me.name !== roles.service) {
        throw new StartupError(`the database role ${me.name} may not create roles: set HOOKLEDGER_MIGRATE_URL (or DATABASE_URL) to a superuser or a role with CREATEROLE, or connect as ${roles.service} after \`hookledger migrate\``)
      }
      return { serviceUrl: params.url, roleUrls }
    }
    const say = params.onAction ?? ((line: string) => params.log.info({ action: line }, 'database:roles'))
    await migrateToLatest(admin, undefined, { passwords: params.passwords, onAction: say, publisherCreatesInPublic: params.embedded })
    return { serviceUrl: roleUrls.service, roleUrls }
  } finally {
    await admin.destroy()
  }
}

/**
 * Waits, with backoff (0.5 s doubling to 15 s, logged once per try), until the database answers:
 * a service started before its database comes up when the database does. Other errors, and an
 * abort (SIGTERM while waiting), end the wait with the error.
 */
async function untilReachable(db: Db, log: Pino, signal: AbortSignal): Promise<void> {
  for (let attempt = 0, waitMs = 500; ; attempt++, waitMs = Math.min(waitMs * 2, 15_000)) {
    try {
      await sql`select 1`.execute(db)
      if (attempt > 0) log.info({ attempts: attempt + 1 }, 'database:reachable')
      return
    } catch (err) {
      if (classifyDatabaseError(err) !== 'unavailable') throw err
      log.warn({ err: (err as Error).message, retry_in_ms: waitMs }, 'database:waiting')
      await new Promise<void>((resolve, reject) => {
        const t = setTimeout(resolve, waitMs)
        signal.addEventListener('abort', () => (clearTimeout(t), reject(new StartupError('stopped while waiting for the database'))), { once: true })
      })
    }
  }
}

/**
 * The operation dependencies for a config and database. `signingKey` says whether this process
 * seals (ledger-keys.ts); by default it does not, and never reads the signing key.
 */
export function createOpDeps(
  config: Config,
  db: Db,
  log: Pino,
  clock: Clock,
  options: { signingKey?: SigningKeySource; port?: number; readDb?: Db | null } = {},
): OpDeps {
  // Already read and validated by loadConfig.
  const extra = config.HOOKLEDGER_CATALOG_FILE?.entries ?? []
  return {
    db,
    clock,
    secretBox: createSecretBox(loadMasterKey(config)),
    ledgerKeys: createLedgerKeys(config, db, options.signingKey ?? { kind: 'none' }),
    egressPolicy: createEgressPolicy({ allow: config.HOOKLEDGER_EGRESS_ALLOW ?? [] }),
    catalog: createEventCatalog(extra),
    logger: log,
    rotationGraceMs: config.HOOKLEDGER_ROTATION_GRACE_HOURS * 3_600_000,
    eventRetentionMs: config.HOOKLEDGER_RETENTION_DAYS * 24 * 3_600_000,
    publicBaseUrl: config.HOOKLEDGER_PUBLIC_URL ?? `http://${config.HOST}:${options.port ?? config.PORT}`,
    logPolicy: config.HOOKLEDGER_WITNESS_POLICY ?? null,
    readReplica: options.readDb ? createReadReplica(options.readDb, db) : null,
  }
}

/** The policy's witnesses that take submissions (a URL), or none. */
function witnessSubmitterFor(config: Config, db: Db, clock: Clock, log: Pino, metrics: ServiceMetrics): WitnessSubmitter | undefined {
  const witnesses = [...(config.HOOKLEDGER_WITNESS_POLICY?.witnesses.values() ?? [])].filter((w) => w.url !== null)
  if (witnesses.length === 0) return undefined
  return new WitnessSubmitter({ db, witnesses, clock, logger: log.child({ component: 'witness' }), onOutcome: (o) => metrics.witnessed(o) })
}

export type Role = 'api' | 'worker' | 'all'

/** A running service. */
export interface RunningService {
  readonly url: string
  stop(): Promise<void>
  /** For a forced exit (a second signal): nothing is drained, but what was started is stopped. */
  abandon(): void
}

/**
 * Starts the API and/or the dispatcher in this process. On the very first start (no token
 * yet) creates a one-time admin + publish token for owner `default` and prints it.
 * `embedAdmits` is the embed scope port; the default is the table-backed one (embeds and
 * access codes managed through `embeds.*` / `access_codes.*`).
 */
export async function startService(
  config: Config,
  options: { role: Role; log: Pino; embedAdmits?: EmbedAdmits; out?: (line: string) => void; stopSignal?: AbortSignal },
): Promise<RunningService> {
  const { log, role } = options
  const out = options.out ?? ((line: string) => process.stdout.write(line + '\n'))
  // The port first: a port in use fails in milliseconds, before the database starts.
  const listener = role !== 'worker' ? await listenHttp({ port: config.PORT, host: config.HOST }) : null
  let database: OpenDatabase | null = null
  let deps: OpDeps
  let sealingKey: LedgerSigningKey | null = null
  try {
    database = await openDatabase(config, log, role === 'all' ? 6 : 4, options.stopSignal ? { waitForDatabase: { signal: options.stopSignal } } : {})
    // The signing key lives only where sealing runs: an API-only process never reads it, and a
    // worker whose key is not the one the ledger's checkpoints lead to does not start.
    if (role !== 'api') sealingKey = await sealingLedgerKey(config, database.db)
    // The log's name is fixed at its first start: a different HOOKLEDGER_LOG_ORIGIN later would be another log.
    await logOriginEnsure(database.db, config.HOOKLEDGER_LOG_ORIGIN).catch((err: unknown) => {
      throw err instanceof LogOriginError ? new StartupError(err.message, { cause: err }) : err
    })
    deps = createOpDeps(config, database.db, log, database.clock, { signingKey: sealingKey ? { kind: 'held', key: sealingKey } : { kind: 'none' }, readDb: database.readDb })
    // The catalog file's types go into the database catalog, which the publisher reads too.
    await catalogFileDeclare(database.db, deps.catalog, config.HOOKLEDGER_CATALOG_FILE?.entries ?? [], deps.clock.now(), log)
  } catch (err) {
    await database?.close()
    await listener?.close()
    throw err
  }
  const metrics = createServiceMetrics({ db: database.db, clock: deps.clock })
  const internalSeen = new Set<string>()
  let dispatcher: Dispatcher | null = null
  const readiness = createReadiness({ db: database.db, dispatcher: role === 'api' ? null : { get msSinceLastPass() { return dispatcher?.msSinceLastPass ?? Infinity } } })
  let url = ''
  if (listener) {
    const app = createApi({ deps, instruments: { metrics: metrics.render, readiness, requested: metrics.requested }, logTiles: config.HOOKLEDGER_LOG_TILES })
    app.route('/', createUiRoutes())
    app.get('/', (c) => c.redirect('/ui'))
    listener.setHandler(app.fetch)
    const port = listener.port
    url = config.HOOKLEDGER_PUBLIC_URL ?? `http://${config.HOST}:${port}`
    ;(deps as { publicBaseUrl: string }).publicBaseUrl = url
    log.info({ url }, 'hookledger listening')
    out(`hookledger listening on ${url} (pid ${process.pid})`)
    out(`admin UI: ${url}/ui`)
    if (!(await apiTokenAny(database.db))) {
      const { token } = await apiTokenCreate(database.db, {
        owner_id: 'default',
        scopes: ['admin', 'publish'],
        label: 'first start',
        now: deps.clock.now(),
      })
      // To a 0600 file, not to stdout: whatever collects the service's output must not hold it.
      out(writeFirstStartToken(config.HOOKLEDGER_DATA_DIR, token).line)
    }
  }
  let sealer: LedgerSealerLoop | null = null
  let summary: { stop(): void } | null = null
  let instrumentsListener: Awaited<ReturnType<typeof listenHttp>> | null = null
  let notifier: ReturnType<typeof createPgNotifier> | null = null
  let transport: ReturnType<typeof createHttpTransport> | null = null
  if (sealingKey) {
    notifier = createPgNotifier(database.currentUrl, (err) => log.warn({ err }, 'notifier:error'))
    const timeouts = attemptTimeoutsOf(config)
    // One tracker for the process's loops: an outage is logged once, when it begins and ends.
    const health = new DatabaseHealth(log.child({ component: 'database' }))
    const proxy = config.HOOKLEDGER_EGRESS_PROXY
    transport = createHttpTransport({ policy: deps.egressPolicy, timeoutMs: timeouts.httpTimeoutMs, ...(proxy ? { proxy } : {}) })
    if (proxy) log.info({ proxy: proxy.label }, 'egress through proxy')
    dispatcher = new Dispatcher({
      db: database.db,
      clock: deps.clock,
      transport,
      secretBox: deps.secretBox,
      // The fan-out tells what it decided of internal types (counted: hookledger_events_internal_total).
      catalog: fanoutCatalogObserved(deps.catalog, (counts) => {
        metrics.internalDecided(counts)
        // Said once per type and process: why these events go nowhere, where an operator looks.
        for (const type of counts.keys()) {
          if (internalSeen.has(type)) continue
          internalSeen.add(type)
          log.info({ event_type: type }, 'fanout:internal_type (exposure internal: recorded and explainable, delivered to no endpoint)')
        }
      }),
      embedAdmits: options.embedAdmits ?? createTableEmbedAdmits(database.db),
      workerId: `${hostname()}:${process.pid}`,
      logger: log.child({ component: 'dispatcher' }),
      notifier,
      schema: config.HOOKLEDGER_DB_SCHEMA,
      concurrency: config.HOOKLEDGER_CONCURRENCY,
      retentionMs: config.HOOKLEDGER_RETENTION_DAYS * 24 * 3_600_000,
      deliveryRetentionDays: config.HOOKLEDGER_DELIVERY_RETENTION_DAYS,
      jobTimeoutMs: timeouts.jobTimeoutMs,
      leaseMs: timeouts.leaseMs,
      snoozeBudget: snoozeBudgetOf(config),
      health,
      observer: loggingObserver(metrics.observer, log.child({ component: 'dispatcher' })),
      shutdownGraceMs: timeouts.jobTimeoutMs,
      maintenanceIntervalMs: config.HOOKLEDGER_MAINTENANCE_INTERVAL_SECONDS * 1000,
    })
    await dispatcher.start()
    sealer = new LedgerSealerLoop({
      db: database.db,
      key: sealingKey,
      handOvers: readLedgerKeyRotations(config).handOvers,
      clock: deps.clock,
      intervalMs: config.HOOKLEDGER_CHECKPOINT_INTERVAL_SECONDS * 1000,
      snapshotEveryMs: config.HOOKLEDGER_SNAPSHOT_INTERVAL_HOURS * 3_600_000,
      logger: log.child({ component: 'sealer' }),
      health,
      witnesses: witnessSubmitterFor(config, database.db, deps.clock, log, metrics),
    })
    sealer.start()
    summary = startActivitySummary({ log, metrics })
    if (role === 'worker' && config.HOOKLEDGER_METRICS_PORT !== undefined) {
      // A worker's counters live in it alone: it serves its own instruments.
      instrumentsListener = await listenHttp({ port: config.HOOKLEDGER_METRICS_PORT, host: config.HOST })
      instrumentsListener.setHandler(createInstrumentRoutes({ db: database.db, instruments: { metrics: metrics.render, readiness } }).app.fetch)
      out(`hookledger worker instruments on http://${config.HOST}:${instrumentsListener.port} (/metrics, /readyz, /healthz)`)
    }
    if (role === 'worker') out(`hookledger worker started (pid ${process.pid})`)
    log.info({ concurrency: config.HOOKLEDGER_CONCURRENCY }, 'dispatcher started')
  }
  let stopping: Promise<void> | null = null
  return {
    url,
    stop() {
      stopping ??= (async () => {
        await listener?.close()
        await instrumentsListener?.close()
        summary?.stop()
        await dispatcher?.stop()
        await sealer?.stop()
        await transport?.close()
        await notifier?.close()
        await database.close()
      })()
      return stopping
    },
    abandon: () => database.abandon(),
  }
}
