import { chownSync, cpSync, existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync, appendFileSync, chmodSync } from 'node:fs'
import path from 'node:path'
import { clusterAccount, clusterDirFor, EmbeddedDatabaseError, ownedDir } from './embedded-cluster-account.js'
import { openEmbeddedDatabase, type EmbeddedDatabase } from './embedded-database.js'

/**
 * Directories whose contents a base backup leaves out (PostgreSQL's "Making a Base Backup
 * Using the Low Level API"): the standby makes its own, and WAL comes by streaming.
 */
const EMPTIED_DIRS = ['pg_wal', 'pg_replslot', 'pg_dynshmem', 'pg_notify', 'pg_serial', 'pg_snapshots', 'pg_stat_tmp', 'pg_subtrans']
/** Files of the running primary that must not be in the copy. */
const SKIPPED_FILES = new Set(['postmaster.pid', 'postmaster.opts', 'server.log', 'backup_label', 'tablespace_map', 'standby.signal', 'recovery.signal'])

/**
 * One open session on the primary, as a superuser (or a REPLICATION role that may run the backup
 * functions). The caller brings the driver: this package manages processes and files, not
 * connections. The backup start and stop must run on this same session.
 */
export interface StandbySourceSession {
  query<Row>(sql: string, params?: unknown[]): Promise<Row[]>
}

export interface StandbyOptions {
  /** The primary's URL: its host, port and credentials go into the standby's `primary_conninfo`. */
  fromUrl: string
  /** A session on that primary (see `StandbySourceSession`). */
  source: StandbySourceSession
  /** The standby's own data dir (as `HOOKLEDGER_DATA_DIR`: the cluster is `<dataDir>/pg`). */
  dataDir: string
  /** The name the standby reports (`application_name`); name it in `synchronous_standby_names` for synchronous replication. */
  name?: string
  port?: number
  settings?: Record<string, string>
}

/** What was made: the running standby and the slot on the primary that keeps its WAL. */
export interface Standby {
  readonly cluster: EmbeddedDatabase
  readonly name: string
  readonly slot: string
}

/**
 * Makes a streaming-replication standby of the primary at `fromUrl` and starts it. The
 * embedded binaries have no `pg_basebackup`, so this is the low-level backup API: on one
 * session `pg_backup_start`, a file copy of the primary's data directory (so the primary must
 * be on this machine, readable by this process), `pg_backup_stop`, whose label is written into
 * the copy. A physical replication slot reserved before the backup keeps the WAL from its start
 * until the standby has streamed it. The copy gets `standby.signal`, `primary_conninfo` (the
 * URL's host, port and credentials) and `primary_slot_name`.
 */
export async function createStandby(options: StandbyOptions): Promise<Standby> {
  const dataDir = path.resolve(options.dataDir)
  const name = options.name ?? 'hookledger_standby'
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new EmbeddedDatabaseError(`standby name "${name}" must be lower-case letters, digits and _`)
  const slot = name
  const from = new URL(options.fromUrl)
  const client = options.source
  let clusterDir: string
  {
    const rows = await client.query<{ dir: string; recovery: boolean }>(`select current_setting('data_directory') as dir, pg_is_in_recovery() as recovery`)
    const source = rows[0]!.dir
    if (rows[0]!.recovery) throw new EmbeddedDatabaseError(`${from.host} is itself a standby: make a standby from the primary`)
    if (!existsSync(path.join(source, 'PG_VERSION'))) {
      throw new EmbeddedDatabaseError(`the primary's data directory ${source} is not on this machine: the low-level backup needs a file copy of it (run this on the primary's host)`)
    }
    const account = clusterAccount()
    mkdirSync(dataDir, { recursive: true, mode: 0o711 })
    chmodSync(dataDir, 0o711)
    clusterDir = clusterDirFor(account, dataDir)
    if (existsSync(path.join(clusterDir, 'PG_VERSION'))) throw new EmbeddedDatabaseError(`${clusterDir} already holds a cluster`)
    await client.query(`select pg_create_physical_replication_slot($1, true) where not exists (select 1 from pg_replication_slots where slot_name = $1)`, [slot])
    await client.query(`select pg_backup_start($1, true)`, [`hookledger standby ${name}`])
    let label: { labelfile: string; spcmapfile: string }
    try {
      ownedDir(account, clusterDir)
      cpSync(source, clusterDir, {
        recursive: true,
        filter: (src) => {
          const rel = path.relative(source, src)
          if (rel === '') return true
          const [top, ...rest] = rel.split(path.sep)
          if (rest.length === 0 && SKIPPED_FILES.has(top!)) return false
          if (top!.startsWith('pgsql_tmp')) return false
          // The directory itself is kept (the server expects it), its contents are not.
          return !(EMPTIED_DIRS.includes(top!) && rest.length > 0)
        },
      })
    } finally {
      label = (await client.query<{ labelfile: string; spcmapfile: string }>(`select labelfile, spcmapfile from pg_backup_stop(false)`))[0]!
    }
    writeFileSync(path.join(clusterDir, 'backup_label'), label.labelfile)
    if (label.spcmapfile) writeFileSync(path.join(clusterDir, 'tablespace_map'), label.spcmapfile)
    mkdirSync(path.join(clusterDir, 'pg_wal', 'archive_status'), { recursive: true })
    writeFileSync(path.join(clusterDir, 'standby.signal'), '')
    const conninfo = [
      `host=${from.hostname}`,
      `port=${from.port || '5432'}`,
      `user=${decodeURIComponent(from.username)}`,
      `password=${decodeURIComponent(from.password)}`,
      `application_name=${name}`,
    ].map((kv) => kv.replace(/\\/g, '\\\\').replace(/'/g, "\\'")).join(' ')
    appendFileSync(path.join(clusterDir, 'postgresql.auto.conf'), `\n# hookledger db standby\nprimary_conninfo = '${conninfo.replace(/'/g, "''")}'\nprimary_slot_name = '${slot}'\n`)
    if (account) chownTree(clusterDir, account.uid, account.gid)
    // The embedded cluster's credentials are the primary's: the copy has the primary's roles.
    writeFileSync(path.join(dataDir, 'pg-credentials.json'), JSON.stringify({ user: decodeURIComponent(from.username), password: decodeURIComponent(from.password) }), { mode: 0o600 })
  }
  const cluster = await openEmbeddedDatabase({
    dataDir,
    ...(options.port !== undefined ? { port: options.port } : {}),
    ...(options.settings ? { settings: options.settings } : {}),
  })
  return { cluster, name, slot }
}

function chownTree(dir: string, uid: number, gid: number): void {
  chownSync(dir, uid, gid)
  for (const entry of readdirSync(dir)) {
    const at = path.join(dir, entry)
    if (statSync(at).isDirectory()) chownTree(at, uid, gid)
    else chownSync(at, uid, gid)
  }
}

/** Removes a standby's cluster files (after it is stopped). */
export function removeStandbyFiles(dataDir: string): void {
  rmSync(dataDir, { recursive: true, force: true })
}
