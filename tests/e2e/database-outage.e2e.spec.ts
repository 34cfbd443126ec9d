import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { encodeMasterKey, generateMasterKey } from '@hookledger/core'
import { freePort, openEmbeddedDatabase, type EmbeddedDatabase } from '@hookledger/embedded'
import { eventually, removeDataDir, TestReceiver } from '@hookledger/testkit'
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
      HOOKLEDGER_EGRESS_ALLOW: '127.0.0.0/8',
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

      const errorsBefore = serve.output().split('notifier:error').length - 1
      await stopCluster()
      const down = await fetch(`${serve.url}/api/admin/webhooks`, { headers: auth })
      expect(down.status).toBe(503)
      expect(down.headers.get('retry-after')).toBe('5')
      expect(down.headers.get('content-type')).toContain('application/problem+json')
      expect(((await down.json()) as { code: string }).code).toBe('database_unavailable')
      // Readiness says so within 2 s (the database check has its own deadline), naming the check.
      const notReady = await fetch(`${serve.url}/readyz`, { signal: AbortSignal.timeout(2_000) })
      expect(notReady.status).toBe(503)
      expect(((await notReady.json()) as { checks: { database: { ok: boolean } } }).checks.database.ok).toBe(false)

      // The database stays down until the notifier has lost its connection and failed to
      // reconnect at least once: LISTEN must survive failed reconnects.
      const notifierErrors = () => serve.output().split('notifier:error').length - 1
      await eventually('a failed LISTEN reconnect', () => notifierErrors() >= errorsBefore + 2)
      await startCluster()
      await eventually('the API to answer again', async () => (await fetch(`${serve.url}/api/admin/webhooks`, { headers: auth })).status === 200)
      await eventually('readiness to come back', async () => (await fetch(`${serve.url}/readyz`)).status === 200)

      // LISTEN came back too: deliveries start on NOTIFY again, far below the 1 s poll.
      const receiver = await new TestReceiver({ status: 204 }).start()
      try {
        const json = { ...auth, 'content-type': 'application/json' }
        const publisher = JSON.parse(
          (await runInProcess(['token', 'create', '--owner', 'default', '--scopes', 'publish', '--json'], env)).stdout,
        ) as { token: string }
        const created = await fetch(`${serve.url}/api/admin/webhooks`, { method: 'POST', headers: json, body: JSON.stringify({ url: receiver.url(), event_types: ['booking.*'] }) })
        expect(created.status).toBe(201)
        const latencies: number[] = []
        const publishOne = async (i: number) => {
          const sent = performance.now()
          const res = await fetch(`${serve.url}/api/events`, {
            method: 'POST',
            headers: { authorization: `Bearer ${publisher.token}`, 'content-type': 'application/json' },
            body: JSON.stringify({ id: `evt_after_${i}`, type: 'booking.created', subject: `booking://${i}` }),
          })
          expect(res.status).toBe(202)
          await receiver.waitFor(i + 1, 10_000)
          latencies.push(receiver.requests[i]!.receivedAt - sent)
        }
        for (let i = 0; i < 7; i++) await publishOne(i)
        const sorted = [...latencies].sort((a, b) => a - b)
        expect(sorted[3], JSON.stringify(latencies)).toBeLessThan(300)
      } finally {
        await receiver.close()
      }
    } finally {
      process.kill(serve.pid, 'SIGTERM')
      expect(await serve.exit, serve.output()).toBe(0)
    }
  })
})
