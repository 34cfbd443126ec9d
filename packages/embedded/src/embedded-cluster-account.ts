import { execFileSync, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { createFileOnce } from './file-once.js'

/**
 * PostgreSQL refuses to run as root. When this process is root, the embedded cluster runs as
 * the `postgres` account, which must be able to reach the binaries and the data directory —
 * and a checkout under `/root` or any mode-0700 folder is out of its reach. This module finds
 * (or creates) the account and, where it cannot reach what it needs, keeps a copy of the
 * binaries and the cluster's data under a shared root the account owns.
 */

/** Thrown when the embedded cluster cannot run here; the message names the remedy. */
export class EmbeddedDatabaseError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'EmbeddedDatabaseError'
  }
}

/** The account the cluster runs as (only when this process is root). */
export interface ClusterAccount {
  readonly uid: number
  readonly gid: number
}

/** Where relocated binaries and clusters live when the account cannot reach the checkout. */
export const SHARED_ROOT = '/var/lib/hookledger'

const REMEDY =
  'set DATABASE_URL to a PostgreSQL server, or run as a non-root user'

function idOf(flag: '-u' | '-g', name: string): number | null {
  try {
    return Number(execFileSync('id', [flag, name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim())
  } catch {
    return null
  }
}

/** The `postgres` account when running as root (created once if missing); null otherwise. */
export function clusterAccount(): ClusterAccount | null {
  if (process.getuid?.() !== 0) return null
  let uid = idOf('-u', 'postgres')
  if (uid === null) {
    try {
      if (spawnSync('getent', ['group', 'postgres']).status !== 0) execFileSync('groupadd', ['--system', 'postgres'], { stdio: 'ignore' })
      execFileSync('useradd', ['--system', '-g', 'postgres', '--no-create-home', '--shell', '/usr/sbin/nologin', 'postgres'], { stdio: 'ignore' })
    } catch (err) {
      throw new EmbeddedDatabaseError(`the embedded PostgreSQL cannot run as root and no "postgres" account could be created (${(err as Error).message.split('\n')[0]}): ${REMEDY}`, { cause: err })
    }
    uid = idOf('-u', 'postgres')
  }
  const gid = idOf('-g', 'postgres')
  if (uid === null || gid === null) throw new EmbeddedDatabaseError(`no "postgres" account to run the embedded PostgreSQL as: ${REMEDY}`)
  return { uid, gid }
}

/** Whether the account can run `executable` and enter `dir` (checked as that account, by the kernel). */
export function accountCanReach(account: ClusterAccount, check: { executable?: string; dir?: string }): boolean {
  const script = [check.executable && 'test -x "$1"', check.dir && 'test -d "$2" -a -x "$2"'].filter(Boolean).join(' && ')
  const res = spawnSync('/bin/sh', ['-c', script || 'true', 'sh', check.executable ?? '', check.dir ?? ''], {
    uid: account.uid,
    gid: account.gid,
    stdio: 'ignore',
    cwd: '/',
  })
  return res.status === 0
}

/**
 * The cluster directory for a data dir. Normally `<dataDir>/pg`; when the account cannot
 * reach the data dir, a directory under the shared root named after the data dir's path,
 * recorded in `<dataDir>/cluster-location` so every process (and a person) finds the same one.
 */
export function clusterDirFor(account: ClusterAccount | null, dataDir: string): string {
  const recorded = path.join(dataDir, 'cluster-location')
  if (existsSync(recorded)) return readFileSync(recorded, 'utf8').trim()
  const inPlace = path.join(dataDir, 'pg')
  if (!account || existsSync(path.join(inPlace, 'PG_VERSION')) || accountCanReach(account, { dir: dataDir })) {
    return inPlace
  }
  const hash = createHash('sha256').update(dataDir).digest('hex').slice(0, 16)
  const dir = path.join(sharedRoot(), 'clusters', hash)
  // The same text from every process: whichever links first, all read one whole file.
  createFileOnce(recorded, dir + '\n', 0o600)
  return readFileSync(recorded, 'utf8').trim()
}

/** Creates `dir` owned by the account (mode 0700), as PostgreSQL requires of its data dir. */
export function ownedDir(account: ClusterAccount | null, dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  if (account) chownSync(dir, account.uid, account.gid)
  chmodSync(dir, 0o700)
}

/** Creates the shared root (0755, so the account can traverse it) and returns it. */
export function sharedRoot(): string {
  mkdirSync(path.join(SHARED_ROOT, 'clusters'), { recursive: true, mode: 0o755 })
  chmodSync(SHARED_ROOT, 0o755)
  chmodSync(path.join(SHARED_ROOT, 'clusters'), 0o755)
  return SHARED_ROOT
}
