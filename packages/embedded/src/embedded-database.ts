import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import {
  clusterAccount,
  clusterDirFor,
  EmbeddedDatabaseError,
  ownedDir,
  type ClusterAccount,
} from './embedded-cluster-account.js'
import { packagedBinaries, reachableBinaries } from './embedded-binaries.js'
import { createFileOnce } from './file-once.js'

/** A PostgreSQL this process can connect to, and how to let go of it. */
export interface EmbeddedDatabase {
  readonly url: (database?: string) => string
  /** True when this process started the server. */
  readonly owned: boolean
  /** Where the cluster's files are (`<dataDir>/pg`, or a relocated directory when root). */
  readonly clusterDir: string
  /**
   * Lets go of the cluster: stops it unless another live process still uses it (whoever
   * started it — a cluster left by a killed process is stopped by the last one to leave).
   */
  stop(): Promise<void>
  /**
   * The same, at once and synchronously, for a process about to exit without waiting (a second
   * Ctrl-C): unless another live process uses the cluster, signals the postmaster to shut down
   * fast (SIGINT) rather than leave it running with nobody to stop it.
   */
  stopNow(): void
}

/** A free TCP port on loopback. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number }
      srv.close(() => resolve(port))
    })
  })
}

/** Whether a process with this pid is running (EPERM: it is, under another user). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
  // A zombie (exited, not yet reaped: a daemonized postmaster under an init that does not reap)
  // still answers signal 0.
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return true
  }
}

/** Reads `postmaster.pid` (pid on line 1, port on line 4) if that server is still running. */
export function runningCluster(clusterDir: string): { pid: number; port: number } | null {
  const file = path.join(clusterDir, 'postmaster.pid')
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch {
    return null
  }
  const lines = text.split('\n')
  const pid = Number(lines[0])
  const port = Number(lines[3])
  return Number.isInteger(pid) && pid > 0 && processAlive(pid) && port > 0 ? { pid, port } : null
}

/** Runs a PostgreSQL tool (as the account when root) and resolves with its output, or rejects. */
function runTool(file: string, args: string[], account: ClusterAccount | null): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      ...(account ?? {}),
      cwd: '/',
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    child.stdout.on('data', (d: Buffer) => (output += d.toString()))
    child.stderr.on('data', (d: Buffer) => (output += d.toString()))
    child.once('error', (err) => reject(new EmbeddedDatabaseError(`cannot run ${path.basename(file)}: ${err.message}`, { cause: err })))
    child.once('close', (code) =>
      code === 0 ? resolve(output) : reject(new EmbeddedDatabaseError(`${path.basename(file)} failed (exit ${code}): ${output.trim().split('\n').slice(-3).join(' | ')}`)),
    )
  })
}

/** The processes using a cluster: one file per pid under `<dataDir>/pg-users/`. */
function usersDir(dataDir: string): string {
  const dir = path.join(dataDir, 'pg-users')
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  return dir
}

function liveUsers(dataDir: string): number[] {
  const dir = usersDir(dataDir)
  const live: number[] = []
  for (const name of readdirSync(dir)) {
    const pid = Number(name)
    if (Number.isInteger(pid) && processAlive(pid)) live.push(pid)
    else rmSync(path.join(dir, name), { force: true })
  }
  return live
}

/**
 * A lock around "start the cluster if it is not running", so two processes starting at once
 * do not both start it. Stale locks (their pid is gone) are taken over.
 */
async function withStartLock<T>(dataDir: string, fn: () => Promise<T>): Promise<T> {
  const file = path.join(dataDir, 'pg-start.lock')
  const deadline = Date.now() + 120_000
  for (;;) {
    // Made whole (createFileOnce): a lock read while its holder was still writing its pid used to
    // look stale, was taken over, and two processes ran initdb on one directory.
    if (createFileOnce(file, String(process.pid), 0o600)) break
    let holder: number
    try {
      holder = Number(readFileSync(file, 'utf8').trim())
    } catch (err) {
      // Released between the two calls: try again.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue
      throw err
    }
    if (!holder || !processAlive(holder)) {
      rmSync(file, { force: true })
      continue
    }
    if (Date.now() > deadline) throw new EmbeddedDatabaseError(`the embedded PostgreSQL under ${dataDir} is being started by pid ${holder}, which has not finished in 120 s`)
    await new Promise((r) => setTimeout(r, 100))
  }
  try {
    return await fn()
  } finally {
    rmSync(file, { force: true })
  }
}

/**
 * Opens the embedded PostgreSQL whose data lives under `dataDir` (kept across restarts). A
 * server already running for it (the service, while the CLI runs in another terminal, or one
 * left behind by a killed process) is adopted; otherwise one is started on a free port with
 * `pg_ctl`, detached, so it outlives a crash of this process and is found again. Credentials
 * are generated once into `dataDir/pg-credentials.json` (mode 0600).
 */
export async function openEmbeddedDatabase(options: {
  dataDir: string
  /** Extra `postgres -c` settings, e.g. for a throwaway test cluster. */
  settings?: Record<string, string>
  /** A fixed port (a test restarting the cluster where clients expect it); default: any free one. */
  port?: number
  onLog?: (line: string) => void
}): Promise<EmbeddedDatabase> {
  const dataDir = path.resolve(options.dataDir)
  try {
    // Traversable (not listable) by the `postgres` account the cluster may run as; secrets inside are 0600.
    mkdirSync(dataDir, { recursive: true, mode: 0o711 })
    chmodSync(dataDir, 0o711)
  } catch (err) {
    throw new EmbeddedDatabaseError(`cannot use ${dataDir} as the data dir (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): set HOOKLEDGER_DATA_DIR to a writable directory`, { cause: err })
  }
  const credFile = path.join(dataDir, 'pg-credentials.json')
  // Processes starting together on a fresh data dir all use the first one's credentials.
  if (!existsSync(credFile)) createFileOnce(credFile, JSON.stringify({ user: 'hookledger', password: randomBytes(18).toString('base64url') }), 0o600)
  const cred = JSON.parse(readFileSync(credFile, 'utf8')) as { user: string; password: string }
  const urlFor = (port: number) => (database = 'postgres') =>
    `postgres://${cred.user}:${encodeURIComponent(cred.password)}@127.0.0.1:${port}/${database}`

  const account = clusterAccount()
  const clusterDir = clusterDirFor(account, dataDir)
  const { nativeDir, version } = await packagedBinaries()
  const binDir = path.join(reachableBinaries(account, nativeDir, version), 'bin')
  const pgCtl = path.join(binDir, 'pg_ctl')

  const me = path.join(usersDir(dataDir), String(process.pid))
  const { port, owned } = await withStartLock(dataDir, async () => {
    const running = runningCluster(clusterDir)
    if (running) return { port: running.port, owned: false }
    if (!existsSync(path.join(clusterDir, 'PG_VERSION'))) await initCluster(binDir, clusterDir, account, cred, options.onLog)
    const port = options.port ?? (await freePort())
    const settings = { listen_addresses: '127.0.0.1', max_connections: '200', unix_socket_directories: "''", ...options.settings }
    const flags = [`-p ${port}`, ...Object.entries(settings).map(([k, v]) => `-c ${k}=${v}`)].join(' ')
    const log = await runTool(pgCtl, ['start', '-D', clusterDir, '-l', path.join(clusterDir, 'server.log'), '-w', '-t', '60', '-o', flags], account)
    options.onLog?.(log)
    return { port, owned: true }
  })
  writeFileSync(me, '')

  let stopped: Promise<void> | null = null
  return {
    url: urlFor(port),
    owned,
    clusterDir,
    stop() {
      stopped ??= (async () => {
        rmSync(me, { force: true })
        if (liveUsers(dataDir).length > 0 || !runningCluster(clusterDir)) return
        await runTool(pgCtl, ['stop', '-D', clusterDir, '-m', 'fast', '-w', '-t', '60'], account).catch((err: Error) => {
          // Already stopped by someone else: nothing to do.
          if (runningCluster(clusterDir)) throw err
        })
      })()
      return stopped
    },
    stopNow() {
      rmSync(me, { force: true })
      if (liveUsers(dataDir).length > 0) return
      const running = runningCluster(clusterDir)
      if (!running) return
      try {
        process.kill(running.pid, 'SIGINT')
      } catch {
        // Gone already.
      }
    },
  }
}

/** `initdb` into `clusterDir` (owned by the account), password auth for the generated user. */
async function initCluster(
  binDir: string,
  clusterDir: string,
  account: ClusterAccount | null,
  cred: { user: string; password: string },
  onLog?: (line: string) => void,
): Promise<void> {
  ownedDir(account, clusterDir)
  // The password file must be readable by the account and by no one else.
  const scratch = mkdtempSync(path.join(tmpdir(), 'hookledger-initdb-'))
  const pwFile = path.join(scratch, 'pw')
  try {
    writeFileSync(pwFile, cred.password + '\n', { mode: 0o600 })
    if (account) {
      chownSync(scratch, account.uid, account.gid)
      chownSync(pwFile, account.uid, account.gid)
    }
    const out = await runTool(
      path.join(binDir, 'initdb'),
      ['-D', clusterDir, '--auth=scram-sha-256', `--username=${cred.user}`, `--pwfile=${pwFile}`, '--encoding=UTF8', '--locale=C'],
      account,
    )
    onLog?.(out)
  } catch (err) {
    // A half-made cluster would block the next initdb (its directory must be empty).
    for (const name of readdirSync(clusterDir)) rmSync(path.join(clusterDir, name), { recursive: true, force: true })
    throw err
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
}

export { EmbeddedDatabaseError }
