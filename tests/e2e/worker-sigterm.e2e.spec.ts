import { describe, expect, it } from 'vitest'
import { encodeMasterKey, generateMasterKey } from '@hookledger/core'
import { TestReceiver, eventually, testDatabase } from '@hookledger/testkit'
import { startServe } from './cli-process.js'
import { createEndpoint, publish } from './worker-fixtures.js'

describe('SIGTERM', () => {
  it('stops claiming, lets the in-flight POST finish, records it and exits 0', async () => {
    const database = await testDatabase()
    const key = generateMasterKey()
    const env = {
      DATABASE_URL: database.url,
      HOOKLEDGER_MASTER_KEY: encodeMasterKey(key),
      HOOKLEDGER_EGRESS_ALLOW: '127.0.0.0/8',
      LOG_LEVEL: 'warn',
    }
    const receiver = await new TestReceiver({ status: 204, delayMs: 1_500 }).start()
    try {
      await createEndpoint(database.db, key, receiver.url())
      const worker = await startServe(['--role', 'worker'], env)
      for (const id of ['evt_first', 'evt_second']) await publish(database.db, id)
      await receiver.waitFor(1, 20_000)
      // Both fanned out (the fan-out runs beside the claims): the second waits behind the
      // endpoint's lease, queued, when the signal comes.
      await eventually('both deliveries queued', async () => (await database.db.selectFrom('deliveries').select('id').execute()).length === 2)
      process.kill(worker.pid, 'SIGTERM')
      expect(await worker.exit).toBe(0)
      const rows = await database.db.selectFrom('deliveries').select(['event_id', 'state', 'attempts']).execute()
      // The one in flight was answered after the signal and recorded; the other was never claimed.
      const inflight = String(receiver.requests[0]!.headers['webhook-id'])
      expect(rows.find((r) => r.event_id === inflight)).toEqual({ event_id: inflight, state: 'completed', attempts: 1 })
      expect(rows.find((r) => r.event_id !== inflight)).toMatchObject({ state: 'pending', attempts: 0 })
      expect(receiver.requests).toHaveLength(1)
    } finally {
      await receiver.close()
      await database.close()
    }
  })
})
