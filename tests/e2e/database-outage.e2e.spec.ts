import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { encodeMasterKey, generateMasterKey } from '@hookledger/core'
import { freePort, openEmbeddedDatabase, type EmbeddedDatabase } from '@hookledger/store'
import { removeDataDir } from '@hookledger/testkit'
import { runInProcess, startServe } from './cli-process.js'

// A PostgreSQL of this test's own, on a fixed port, that the test stops and starts again.
const root = mkdtempSync(path.join(tmpdir(), 'hookledger-outage-'))
const pgDir = path.join(root, 'pg-data')
let cluster: EmbeddedDatabase | null = null
let port = 0
const startCluster = async () => {
  cluster = await openEmbeddedDatabase({ dataDir: pgDir, port, settings: { fsync: 'off' } })
  return cluster
}
const stopCluster = async () => {
  await cluster?.stop()
  cluster = null
}
afterAll(async () => {
  await stopCluster()
  removeDataDir(pgDir)
  rmSync(root, { recursive: true, force: true })
})

const until = async (what: string, check: () => boolean | Promise<boolean>, timeoutMs = 30_000) => {
  const end = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

describe('the database goes away and comes back', () => {
  it('a service started before its database waits for it; while it is down, requests answer 503 with Retry-After; the process stays up', async () => {
    port = await freePort()
    const url = (await startCluster()).url('postgres')
    await stopCluster()
    const env = {
      DATABASE_URL: url,
      HOOKLEDGER_DATA_DIR: path.join(root, 'data'),
      HOOKLEDGER_MASTER_KEY: encodeMasterKey(generateMasterKey()),
      PORT: '0',
      LOG_LEVEL: 'info',
    }
    // The service starts while its database is down: it waits (logged), and comes up when the
    // database does.
    let waiting!: () => void
    const sawWaiting = new Promise<void>((r) => (waiting = r))
    const serving = startServe([], env, (out) => out.includes('database:waiting') && waiting())
    await sawWaiting
    await startCluster()
    const serve = await serving
    const output = serve.output()
    try {
      const minted = await runInProcess(['token', 'create', '--owner', 'default', '--scopes', 'admin', '--json'], env)
      const { token } = JSON.parse(minted.stdout) as { token: string }
      const auth = { authorization: `Bearer ${token}` }
      expect((await fetch(`${serve.url}/api/admin/webhooks`, { headers: auth })).status).toBe(200)

      await stopCluster()
      const down = await fetch(`${serve.url}/api/admin/webhooks`, { headers: auth })
      expect(down.status).toBe(503)
      expect(down.headers.get('retry-after')).toBe('5')
      expect(down.headers.get('content-type')).toContain('application/problem+json')
      expect(((await down.json()) as { code: string }).code).toBe('database_unavailable')

      await startCluster()
      await until('the API to answer again', async () => (await fetch(`${serve.url}/api/admin/webhooks`, { headers: auth })).status === 200)
    } finally {
      process.kill(serve.pid, 'SIGTERM')
      expect(await serve.exit, serve.output()).toBe(0)
    }
  })
})
