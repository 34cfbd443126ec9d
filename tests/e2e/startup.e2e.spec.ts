import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { encodeMasterKey, generateMasterKey } from '@hookledger/core'
import { processAlive, runningCluster } from '@hookledger/embedded'
import { removeDataDir, testDatabase, type TestDatabase } from '@hookledger/testkit'
import { readFileSync } from 'node:fs'
import { runCli, runInProcess, startServe } from './cli-process.js'

const dirs: string[] = []
/** A fresh data dir inside a mode-0700 folder (as `mktemp -d` makes): out of the `postgres` account's reach. */
const freshDataDir = () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'hookledger-startup-'))
  dirs.push(dir)
  return path.join(dir, 'data')
}
afterAll(() => {
  for (const dir of dirs) {
    removeDataDir(path.join(dir, 'data'))
    rmSync(dir, { recursive: true, force: true })
  }
})

/** Waits for `check` (a file the process writes as it starts), up to 10 s. */
async function eventuallyTrue(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out waiting')
    await new Promise((r) => setTimeout(r, 25))
  }
}

/** The cluster directory a data dir uses (`pg` inside it, or where `cluster-location` points). */
const clusterOf = (dataDir: string) => {
  const location = path.join(dataDir, 'cluster-location')
  return existsSync(location) ? readFileSync(location, 'utf8').trim() : path.join(dataDir, 'pg')
}

describe('start-up failures are one line and a non-zero exit', () => {
  let database: TestDatabase
  let busy: Server
  let busyPort = 0
  beforeAll(async () => {
    database = await testDatabase()
    busy = createServer()
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve))
    busyPort = (busy.address() as { port: number }).port
  })
  afterAll(async () => {
    busy.close()
    await database.close()
  })

  it('serve on a port in use: one line naming the port and the remedy, exit 1', async () => {
    const res = await runCli(['serve'], {
      DATABASE_URL: database.url,
      HOOKLEDGER_DATA_DIR: freshDataDir(),
      PORT: String(busyPort),
      LOG_LEVEL: 'warn',
    })
    expect(res.code).toBe(1)
    expect(res.stderr.trim().split('\n')).toHaveLength(1)
    expect(res.stderr).toContain(`port ${busyPort} on 127.0.0.1 is already in use`)
    expect(res.stderr).toContain('PORT')
    expect(res.stderr).not.toMatch(/\n\s+at /)
  })

  it('timeouts that cannot nest (HTTP timeout ≥ job timeout) stop the start with exit 2, naming the setting', async () => {
    const res = await runInProcess(['serve'], {
      DATABASE_URL: database.url,
      HOOKLEDGER_JOB_TIMEOUT_SECONDS: '15',
      HOOKLEDGER_HTTP_TIMEOUT_SECONDS: '20',
    })
    expect(res.code).toBe(2)
    expect(res.stderr).toContain('HOOKLEDGER_HTTP_TIMEOUT_SECONDS: the HTTP timeout (20 s) must be shorter than the job timeout (15 s')
  })

  it('serve with DATABASE_URL and a data dir that does not exist yet just works (the master key is created there)', async () => {
    const dataDir = freshDataDir()
    const serve = await startServe([], { DATABASE_URL: database.url, HOOKLEDGER_DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'warn' })
    try {
      const health = await fetch(`${serve.url}/healthz`)
      expect(health.status).toBe(200)
      expect(existsSync(path.join(dataDir, 'master.key'))).toBe(true)
    } finally {
      process.kill(serve.pid, 'SIGTERM')
      expect(await serve.exit, serve.output()).toBe(0)
    }
  })
})

describe('the embedded cluster', () => {
  it('is adopted after its starter was killed, shared with the CLI, stopped by the last clean exit; an operator token reads the ledger', async () => {
    const dataDir = freshDataDir()
    const env = {
      DATABASE_URL: '',
      HOOKLEDGER_DATA_DIR: dataDir,
      HOOKLEDGER_MASTER_KEY: encodeMasterKey(generateMasterKey()),
      PORT: '0',
      LOG_LEVEL: 'warn',
    }
    const first = await startServe([], env)
    const cluster = runningCluster(clusterOf(dataDir))
    expect(cluster).not.toBeNull()
    // The first start's token goes to a 0600 file whose path is printed, never to the output.
    const tokenFile = path.join(dataDir, 'first-start-token')
    await eventuallyTrue(() => existsSync(tokenFile))
    const firstToken = readFileSync(tokenFile, 'utf8').trim()
    expect(firstToken.length).toBeGreaterThan(20)
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600)
    // The file is written before the line is printed: wait for the line.
    await eventuallyTrue(() => first.output().includes(`first start: created an admin + publish token for owner "default" in ${tokenFile}`))
    expect(first.output()).not.toContain(firstToken)
    const asAdmin = await fetch(`${first.url}/api/admin/webhooks`, { headers: { authorization: `Bearer ${firstToken}` } })
    expect(asAdmin.status).toBe(200)
    process.kill(first.pid, 'SIGKILL')
    await first.exit
    // The cluster outlives the killed process that started it…
    expect(runningCluster(clusterOf(dataDir))).toEqual(cluster)

    // …and the next service adopts it.
    const second = await startServe([], env)
    try {
      expect(runningCluster(clusterOf(dataDir))).toEqual(cluster)
      const minted = await runCli(['token', 'create', '--scopes', 'operator', '--json'], env)
      expect(minted.code, minted.stderr).toBe(0)
      const { token, owner_id, scopes } = JSON.parse(minted.stdout) as { token: string; owner_id: null; scopes: string[] }
      expect({ owner_id, scopes }).toEqual({ owner_id: null, scopes: ['operator'] })
      // The CLI left the cluster running: the service still uses it.
      expect(runningCluster(clusterOf(dataDir))).toEqual(cluster)
      const feed = await fetch(`${second.url}/api/operator/ledger?limit=5`, { headers: { authorization: `Bearer ${token}` } })
      expect(feed.status).toBe(200)
      expect(await feed.json()).toMatchObject({ data: expect.any(Array) })
      const asOwner = await runCli(['token', 'create', '--scopes', 'operator', '--owner', 'acme'], env)
      expect(asOwner.code).toBe(2)
      expect(asOwner.stderr).toContain('drop --owner')
    } finally {
      process.kill(second.pid, 'SIGTERM')
      expect(await second.exit, second.output()).toBe(0)
    }
    // The last user's clean exit stopped it.
    expect(runningCluster(clusterOf(dataDir))).toBeNull()
    expect(processAlive(cluster!.pid)).toBe(false)
  })

  it('two services started at once on a fresh data dir (no keys given) share one cluster, one password and one master key', async () => {
    const dataDir = freshDataDir()
    const env = { DATABASE_URL: '', HOOKLEDGER_DATA_DIR: dataDir, HOOKLEDGER_MASTER_KEY: '', PORT: '0', LOG_LEVEL: 'warn' }
    // Each makes the credentials, the master key and the ledger key if it finds none: one must win, whole.
    const [api, worker] = await Promise.all([startServe(['--role', 'api'], env), startServe(['--role', 'worker'], env)])
    try {
      expect(readdirSync(dataDir).filter((f) => f.endsWith('.tmp'))).toEqual([])
      expect((await fetch(`${api.url}/readyz`)).status).toBe(200)
      // Both joined the one cluster, so the CLI (a third process) reaches what they wrote.
      const minted = await runCli(['token', 'create', '--scopes', 'operator', '--json'], env)
      expect(minted.code, minted.stderr).toBe(0)
    } finally {
      for (const p of [api, worker]) process.kill(p.pid, 'SIGTERM')
      expect(await api.exit, api.output()).toBe(0)
      expect(await worker.exit, worker.output()).toBe(0)
    }
    expect(runningCluster(clusterOf(dataDir))).toBeNull()
  })
})
