import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Webhook } from 'standardwebhooks'
import { afterAll, describe, expect, it } from 'vitest'
import { eventually, removeDataDir, TestReceiver } from '@hookledger/testkit'
import { runCli, startServe } from './cli-process.js'

const dataDir = mkdtempSync(path.join(tmpdir(), 'hookledger-e2e-'))
afterAll(() => removeDataDir(dataDir))

describe('walking skeleton, end to end through the real CLI', () => {
  it('publishes 3 events over HTTP and each arrives once, signed; replay finds no difference', async () => {
    const env = { HOOKLEDGER_DATA_DIR: dataDir, HOOKLEDGER_EGRESS_ALLOW: '127.0.0.0/8', PORT: '0', LOG_LEVEL: 'warn', DATABASE_URL: '' }
    // The README's way: `npx hookledger serve`.
    const serve = await startServe([], env, undefined, { viaNpx: true })
    let verifier: Webhook | null = null
    const verified: string[] = []
    const receiver = await new TestReceiver((req) => {
      try {
        verifier!.verify(req.body, req.headers as Record<string, string>)
        verified.push(String(req.headers['webhook-id']))
        return { status: 204 }
      } catch {
        return { status: 400 }
      }
    }).start()
    try {
      const created = await runCli(['token', 'create', '--owner', 'acme', '--scopes', 'admin,publish', '--json'], env, { viaNpx: true })
      expect(created.code, created.stderr).toBe(0)
      const { token } = JSON.parse(created.stdout) as { token: string }
      const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }

      const res = await fetch(`${serve.url}/api/admin/webhooks`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ url: receiver.url(), event_types: ['booking.*'] }),
      })
      expect(res.status).toBe(201)
      const { endpoint, secret } = (await res.json()) as { endpoint: { id: string }; secret: string }
      expect(secret).toMatch(/^whsec_/)
      verifier = new Webhook(secret)

      const ids = ['evt_one', 'evt_two', 'evt_three']
      for (const id of ids) {
        const r = await fetch(`${serve.url}/api/events`, {
          method: 'POST',
          headers: auth,
          body: JSON.stringify({ id, type: 'booking.created', subject: `booking://${id}`, data: { booking_id: id } }),
        })
        expect(r.status).toBe(202)
      }
      await receiver.waitFor(3, 20_000)

      // The settle is batched a few ms after the answer; poll the API until all three are completed.
      type Row = { state: string; attempts: number; event_id: string }
      const rows = await eventually('all three deliveries completed', async () => {
        const d = await fetch(`${serve.url}/api/admin/webhooks/${endpoint.id}/deliveries`, { headers: auth })
        const data = ((await d.json()) as { data: Row[] }).data
        return data.length === 3 && data.every((r) => r.state === 'completed') && data
      })
      expect(rows.map((r) => [r.event_id, r.state, r.attempts]).sort()).toEqual(
        ids.map((id) => [id, 'completed', 1]).sort(),
      )
      // Every delivery is settled completed after one attempt, so nothing is left to send: a
      // duplicate would already have arrived.
      expect(receiver.requests.map((r) => r.headers['webhook-id']).sort()).toEqual([...ids].sort())
      expect(verified.sort()).toEqual([...ids].sort())

      const replay = await runCli(['ledger', 'replay', '--verify'], env)
      expect(replay.stdout).toContain('no differences')
      expect(replay.code, replay.stdout + replay.stderr).toBe(0)
    } finally {
      process.kill(serve.pid, 'SIGTERM')
      const code = await serve.exit
      await receiver.close()
      expect(code, serve.output()).toBe(0)
    }
  })
})
