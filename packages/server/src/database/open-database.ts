/**
 * Opening the database a process runs on: the embedded cluster or DATABASE_URL (one host or a
 * primary and its standbys), the migrations as a privileged role, the service role's pool, the
 * database clock, and HOOKLEDGER_READ_DATABASE_URL's replica.
 */
import pg from 'pg'
import { sql } from 'kysely'
import type { Logger as Pino } from 'pino'
import { classifyDatabaseError, type Clock } from '@hookledger/core'
import {
  createDb,
  DatabaseClock,
  installRoleNamesOf,
  LOGIN_ROLES,
  migrateToLatest,
  migrationsPending,
  onHostsOf,
  PrimaryPool,
  servicePool,
  primaryHostUrl,
  rolePassword,
  roleUrl,
  splitHosts,
  type Db,
  type LoginRole,
} from '@hookledger/store'
import { openEmbeddedDatabase, type EmbeddedDatabase } from '@hookledger/embedded'
import { settledWithin } from '@hookledger/worker'
import type { Config } from '../config.js'
import { loadMasterKey } from '../key-files.js'
import { StartupError } from '../startup-error.js'

/** How long a stop waits for the pools to end (every lent client back) before going on without them. */
const POOL_END_GRACE_MS = 5_000

/**
 * A connection dropped by the server (restart, failover, shutdown) must never crash the process:
 * an idle one is replaced by the pool on next use, and one checked out fails the query in flight
 * (its unit of work is retried or rescued). Their 'error' events are handled here, logged at debug.
 */
function survivesDroppedConnections<P extends Pick<pg.Pool, 'on'> | PrimaryPool>(pool: P, log: Pino, what: string): P {
  pool.on('error', (err: Error) => log.debug({ err: err.message }, `${what}:idle_connection_error`))
  pool.on('connect', (client: pg.PoolClient) => client.on('error', (err: Error) => log.debug({ err: err.message }, `${what}:connection_error`)))
  return pool
}

/** An open database: Kysely over a small pool, plus what is needed to close it. */
export interface OpenDatabase {
  readonly db: Db
  /** The URL this process connects with (the service role's). */
  readonly url: string
  /** What the service pool connects to: `url`, on every host of a multi-host DATABASE_URL. */
  readonly poolUrl: string
  /** The schema the database's tables are in. */
  readonly schema: string
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
  options: {
    waitForDatabase?: { signal: AbortSignal }
    onRoleAction?: (line: string) => void
    /** How long `close` waits for the pools to end before going on without them (default 5 s). */
    poolEndGraceMs?: number
  } = {},
): Promise<OpenDatabase> {
  const poolEndGraceMs = options.poolEndGraceMs ?? POOL_END_GRACE_MS
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
  const poolUrl = splitHosts(hostList).length > 1 ? onHostsOf(serviceUrl, hostList) : serviceUrl
  const pool = servicePool(poolUrl, poolConfig, { onDiscover: (host) => log.info({ host: new URL(host).host }, 'database:primary_found') })
  const primaryPool = pool instanceof PrimaryPool ? pool : null
  survivesDroppedConnections(pool, log, 'database')
  const prepare = config.HOOKLEDGER_DB_PREPARED_STATEMENTS
  const db = createDb(pool, { schema, prepare })
  const pending = await migrationsPending(db).catch(() => [])
  if (pending.length > 0) throw new StartupError(`the database lacks migrations ${pending.join(', ')}: run \`hookledger migrate\` with HOOKLEDGER_MIGRATE_URL set to a role that may create roles`)
  const clock = await DatabaseClock.start(db, { logger: log })
  let readDb: Db | null = null
  if (config.HOOKLEDGER_READ_DATABASE_URL) {
    const readPool = new pg.Pool({ connectionString: onHostsOf(serviceUrl, config.HOOKLEDGER_READ_DATABASE_URL), ...poolConfig })
    readDb = createDb(survivesDroppedConnections(readPool, log, 'database:replica'), { schema, prepare })
  }
  return {
    db,
    readDb,
    url: serviceUrl,
    poolUrl,
    schema,
    currentUrl: () => primaryPool?.primaryUrl ?? serviceUrl,
    migrateUrl,
    roleUrls,
    clock,
    close: async () => {
      clock.stop()
      // A pool ends only once every client it lent is back. One never returned (a unit of work
      // stuck on a connection the server dropped) must not hold the stop forever, nor leave it
      // waiting on nothing, so that the event loop runs dry and Node exits with code 13 (seen
      // once in the fault suite, stopping `serve` after a database restart).
      const ended = await settledWithin(Promise.all([readDb?.destroy(), db.destroy()]), poolEndGraceMs)
      if (!ended) {
        const { totalCount, idleCount, waitingCount } = pool as Partial<pg.Pool>
        log.warn({ clients: totalCount, idle: idleCount, waiting: waitingCount, graceMs: poolEndGraceMs }, 'database:pool_end_unfinished')
      }
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
