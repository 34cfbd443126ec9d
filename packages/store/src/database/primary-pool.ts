import pg from 'pg'
import type { PostgresPool, PostgresPoolClient } from 'kysely'

/**
 * One URL per host of a multi-host URL (`postgres://u:p@h1:5432,h2:5433/db?…`, libpq's form),
 * in order; a single-host URL gives itself.
 */
export function splitHosts(url: string): string[] {
  const m = /^(postgres(?:ql)?:\/\/)([^@/]*@)?([^/?#]*)(.*)$/s.exec(url)
  if (!m) return [url]
  const [, scheme, auth = '', hosts, rest] = m
  const list = hosts!.split(',').filter((h) => h !== '')
  return list.length <= 1 ? [url] : list.map((h) => `${scheme}${auth}${h}${rest}`)
}

/** The same URL (credentials, database, options) on the hosts of `hostsFrom` (a multi-host URL). */
export function onHostsOf(url: string, hostsFrom: string): string {
  const hosts = /^postgres(?:ql)?:\/\/(?:[^@/]*@)?([^/?#]*)/s.exec(hostsFrom)?.[1]
  const m = /^(postgres(?:ql)?:\/\/)([^@/]*@)?([^/?#]*)(.*)$/s.exec(url)
  return hosts && m ? `${m[1]}${m[2] ?? ''}${hosts}${m[4]}` : url
}

/**
 * The single-host URL of whichever host of `url` is the primary now (itself when it names one
 * host), for what must talk to the primary on one connection (migrations, LISTEN).
 */
export async function primaryHostUrl(url: string): Promise<string> {
  if (splitHosts(url).length === 1) return url
  const pool = new PrimaryPool(url, { max: 1, connectionTimeoutMillis: 10_000 })
  pool.on('error', () => {})
  try {
    return await pool.discover()
  } finally {
    await pool.end()
  }
}

/**
 * Errors after which the host a connection is on may no longer be the primary: the connection
 * broke (no SQLSTATE, or class 08 / 57P0x: shut down, terminated) or it is read-only (25006:
 * a standby, or a demoted primary).
 */
export function meansRediscover(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code
  if (typeof code !== 'string') return true
  return code === '25006' || code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03'
}

type Listener = (...args: any[]) => void

/**
 * A pool over several hosts that always hands out connections to the one that is primary:
 * node-postgres has no `target_session_attrs=read-write`, so each new connection is asked
 * `pg_is_in_recovery()` and a standby's is closed; after a broken connection or a read-only
 * error the primary is looked for again, host by host, at the next connect. So writes follow
 * a promotion as soon as the promoted host answers, and never reach a standby.
 */
export class PrimaryPool implements PostgresPool {
  readonly hosts: readonly string[]
  readonly #pools: pg.Pool[]
  readonly #checked = new WeakSet<pg.PoolClient>()
  readonly #wrapped = new WeakMap<pg.PoolClient, PostgresPoolClient & { broken: boolean }>()
  #primary: number | null = null
  #onDiscover: (host: string) => void

  constructor(url: string, config: Omit<pg.PoolConfig, 'connectionString'> = {}, options: { onDiscover?: (host: string) => void } = {}) {
    this.hosts = splitHosts(url)
    this.#pools = this.hosts.map((connectionString) => new pg.Pool({ ...config, connectionString }))
    this.#onDiscover = options.onDiscover ?? (() => {})
  }

  /** The URL of the host found to be primary, or null until one is (or after one failed). */
  get primaryUrl(): string | null {
    return this.#primary === null ? null : this.hosts[this.#primary]!
  }

  /** Finds the primary now (one connection per host at most) and returns its URL. */
  async discover(): Promise<string> {
    const client = await this.connect()
    client.release()
    return this.primaryUrl!
  }

  on(event: 'error', listener: (err: Error) => void): this
  on(event: 'connect', listener: (client: pg.PoolClient) => void): this
  on(event: 'error' | 'connect', listener: Listener): this {
    for (const pool of this.#pools) pool.on(event as 'error', listener)
    return this
  }

  async connect(): Promise<PostgresPoolClient> {
    if (this.#primary !== null) {
      const index = this.#primary
      const client = await this.#primaryClient(index).catch((err: unknown) => {
        if (this.#primary === index) this.#primary = null
        if (!meansRediscover(err)) throw err
        return null
      })
      if (client) return this.#wrap(client)
    }
    let lastError: unknown = new Error('no host is a primary')
    for (const [index] of this.hosts.entries()) {
      try {
        const client = await this.#primaryClient(index)
        if (client) {
          this.#primary = index
          this.#onDiscover(this.hosts[index]!)
          return this.#wrap(client)
        }
        lastError = Object.assign(new Error(`no host of ${this.hosts.length} is a primary (all in recovery)`), { code: '57P03' })
      } catch (err) {
        lastError = err
      }
    }
    throw lastError
  }

  /** A connection on host `index` if that host is the primary; null (closed) if it is a standby. */
  async #primaryClient(index: number): Promise<pg.PoolClient | null> {
    const client = await this.#pools[index]!.connect()
    if (this.#checked.has(client)) return client
    try {
      const { rows } = await client.query<{ recovery: boolean }>('select pg_is_in_recovery() as recovery')
      if (rows[0]!.recovery) {
        client.release(true)
        return null
      }
    } catch (err) {
      client.release(true)
      throw err
    }
    this.#checked.add(client)
    return client
  }

  /** The same client object each time (Kysely keys its per-connection setup on it). */
  #wrap(client: pg.PoolClient): PostgresPoolClient {
    let wrapped = this.#wrapped.get(client)
    if (!wrapped) {
      const watch = (err: unknown): never => {
        if (meansRediscover(err)) {
          wrapped!.broken = true
          this.#primary = null
        }
        throw err
      }
      wrapped = {
        broken: false,
        query: ((...args: unknown[]) => {
          const result = (client.query as (...a: unknown[]) => unknown)(...args)
          return result instanceof Promise ? result.catch(watch) : result
        }) as PostgresPoolClient['query'],
        release: () => {
          const broken = wrapped!.broken
          if (broken) this.#wrapped.delete(client)
          client.release(broken ? true : undefined)
        },
      }
      this.#wrapped.set(client, wrapped)
    }
    return wrapped
  }

  async end(): Promise<void> {
    await Promise.all(this.#pools.map((p) => p.end()))
  }
}

/**
 * The pool a process's service connections come from: a PrimaryPool over a multi-host URL, a
 * plain pool over one host. For the composition roots (the service's, a sealer thread's).
 */
export function servicePool(
  url: string,
  config: Omit<pg.PoolConfig, 'connectionString'>,
  options: { onDiscover?: (host: string) => void } = {},
): pg.Pool | PrimaryPool {
  return splitHosts(url).length > 1 ? new PrimaryPool(url, config, options) : new pg.Pool({ ...config, connectionString: url })
}
