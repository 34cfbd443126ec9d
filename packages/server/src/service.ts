import { hostname } from 'node:os'
import type { Logger as Pino } from 'pino'
import {
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
  createPgNotifier,
  createReadReplica,
  createTableEmbedAdmits,
  fanoutCatalogObserved,
  type Db,
  type EmbedAdmits,
} from '@hookledger/store'
import { DatabaseHealth, Dispatcher, LedgerSealerLoop, WitnessSubmitter, createHttpTransport, startSealerThread, type SealerThread } from '@hookledger/worker'
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
export * from './database/open-database.js'
import { openDatabase, type OpenDatabase } from './database/open-database.js'
import { writeFirstStartToken } from './first-start-token.js'
import { readLedgerKeyRotations } from './ledger-key-rotations-file.js'

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
  /** What `stop` is waiting for now (`null` before it starts and once it finished). */
  readonly stopping: string | null
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
  let sealerThread: SealerThread | null = null
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
    // The rows' hashing runs on a thread of its own, beside the deliveries (sealer-thread.ts).
    sealerThread = startSealerThread({ url: database.poolUrl, schema: database.schema, key: sealingKey })
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
      seal: sealerThread.seal,
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
  let stage: string | null = null
  // Each step named, so an exit before the last (an await nothing will ever settle) says which.
  const step = async (name: string, run: () => Promise<void> | void): Promise<void> => {
    stage = name
    await run()
  }
  return {
    url,
    get stopping() {
      return stage
    },
    stop() {
      stopping ??= (async () => {
        await step('the API listener', () => listener?.close())
        await step('the instruments listener', () => instrumentsListener?.close())
        summary?.stop()
        await step('the dispatcher', () => dispatcher?.stop())
        await step('the sealer', () => sealer?.stop())
        await step('the sealer thread', () => sealerThread?.close())
        await step('the HTTP transport', () => transport?.close())
        await step('the notifier', () => notifier?.close())
        await step('the database', () => database.close())
        stage = null
      })()
      return stopping
    },
    abandon: () => database.abandon(),
  }
}
