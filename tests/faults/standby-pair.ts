import path from 'node:path'
import pg from 'pg'
import { sql } from 'kysely'
import { createDb, onHostsOf, PrimaryPool, type Db } from '@hookledger/store'
import { freePort, openEmbeddedDatabase, runningCluster, type EmbeddedDatabase } from '@hookledger/embedded'
import { eventually, removeDataDir } from '@hookledger/testkit'
import { runCli } from '../e2e/cli-process.js'
import type { FaultRig } from './fault-harness.js'

/** The standby's name on the primary (`application_name`, slot, `synchronous_standby_names`). */
export const STANDBY_NAME = 'hookledger_standby'

/**
 * A fault rig's primary and a standby of it made by `hookledger db standby` (the real command),
 * with a handle over both hosts that follows the primary as the service does (PrimaryPool).
 */
export class StandbyPair {
  readonly #dataDir: string
  #standby: EmbeddedDatabase | null = null
  standbyPort = 0
  /** Over both hosts, as the superuser: always the current primary. */
  db!: Db

  constructor(readonly rig: FaultRig) {
    this.#dataDir = path.join(rig.root, 'standby-data')
  }

  async open(options: { synchronous: boolean }): Promise<this> {
    this.standbyPort = await freePort()
    const made = await runCli(['db', 'standby', '--from', this.rig.databaseUrl(), '--data-dir', this.#dataDir, '--port', String(this.standbyPort)], this.rig.env())
    if (made.code !== 0) throw new Error(`db standby failed (${made.code}): ${made.stdout}${made.stderr}`)
    // Adopted, so afterAll stops it (the command left it running, as a standby should be).
    this.#standby = await openEmbeddedDatabase({ dataDir: this.#dataDir })
    const pool = new PrimaryPool(this.bothHosts(this.rig.databaseUrl()), { max: 3 })
    pool.on('error', () => {})
    pool.on('connect', (client) => client.on('error', () => {}))
    this.db = createDb(pool)
    if (options.synchronous) {
      await sql`alter system set synchronous_standby_names = ${sql.lit(STANDBY_NAME)}`.execute(this.rig.db)
      await sql`select pg_reload_conf()`.execute(this.rig.db)
    }
    const want = options.synchronous ? 'sync' : 'async'
    await eventually(`the standby streaming (${want})`, async () => {
      const { rows } = await sql<{ sync_state: string; state: string }>`select sync_state, state from pg_stat_replication where application_name = ${STANDBY_NAME}`.execute(this.rig.db)
      return rows[0]?.state === 'streaming' && rows[0].sync_state === want
    }, { timeoutMs: 60_000 })
    return this
  }

  /** `url` (its credentials and database) on both hosts: primary first, then the standby. */
  bothHosts(url: string): string {
    return onHostsOf(url, `postgres://x@127.0.0.1:${this.rig.port},127.0.0.1:${this.standbyPort}/`)
  }

  /** The standby alone, as the superuser. */
  standbyUrl(): string {
    return Object.assign(new URL(this.rig.databaseUrl()), { port: String(this.standbyPort) }).toString()
  }

  /**
   * Cuts the standby off its primary (its `primary_conninfo` emptied: the WAL receiver stops),
   * as a partition would an asynchronous standby: what the primary commits from now on is not
   * on the standby.
   */
  async cutStandbyOff(): Promise<void> {
    const client = new pg.Client({ connectionString: this.standbyUrl() })
    await client.connect()
    try {
      await client.query(`alter system set primary_conninfo = ''`)
      await client.query('select pg_reload_conf()')
    } finally {
      await client.end()
    }
    await eventually('the standby to stop streaming', async () => {
      const { rows } = await sql<{ n: string }>`select count(*) as n from pg_stat_replication where application_name = ${STANDBY_NAME}`.execute(this.rig.db)
      return Number(rows[0]!.n) === 0
    }, { timeoutMs: 30_000 })
  }

  /** A query on the standby alone (read-only while it is one). */
  async onStandby<R extends pg.QueryResultRow>(text: string): Promise<R[]> {
    const client = new pg.Client({ connectionString: this.standbyUrl() })
    await client.connect()
    try {
      return (await client.query<R>(text)).rows
    } finally {
      await client.end()
    }
  }

  /** `kill -9` of the primary's postmaster: no shutdown, no last WAL sent. */
  async killPrimary(): Promise<void> {
    const { rows } = await sql<{ dir: string }>`select current_setting('data_directory') as dir`.execute(this.rig.db)
    const running = runningCluster(rows[0]!.dir)
    if (!running) throw new Error('the primary is not running')
    process.kill(running.pid, 'SIGKILL')
    await eventually('the primary to stop answering', async () => {
      const client = new pg.Client({ connectionString: this.rig.databaseUrl(), connectionTimeoutMillis: 2_000 })
      client.on('error', () => {})
      try {
        await client.connect()
        await client.query('select 1')
        return false
      } catch {
        return true
      } finally {
        await client.end().catch(() => {})
      }
    }, { timeoutMs: 30_000 })
  }

  /** `select pg_promote()` on the standby (waits for the promotion to finish). */
  async promote(): Promise<void> {
    const client = new pg.Client({ connectionString: this.standbyUrl() })
    await client.connect()
    try {
      const { rows } = await client.query<{ promoted: boolean }>('select pg_promote(true, 60) as promoted')
      if (!rows[0]!.promoted) throw new Error('pg_promote did not finish in 60 s')
    } finally {
      await client.end()
    }
  }

  async close(): Promise<void> {
    await this.db?.destroy().catch(() => {})
    await this.#standby?.stop().catch(() => {})
    removeDataDir(this.#dataDir)
  }
}
