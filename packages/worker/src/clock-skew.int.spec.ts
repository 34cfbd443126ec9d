/**
 * Two workers on hosts whose clocks are 30 s apart. On their own clocks the fast one takes the
 * other's leases for expired the moment they are taken (the hazard, shown first); on the
 * database's clock (DatabaseClock, what `serve` gives every rule) nothing is rescued early,
 * nothing is sent twice, and no endpoint ever has two requests in flight.
 */
import { afterEach, describe, expect, it } from 'vitest'
import {
  createEgressPolicy,
  createEventCatalog,
  createSecretBox,
  generateMasterKey,
  generateWebhookSecret,
  secretKeyId,
  systemClock,
  type Clock,
} from '@hookledger/core'
import { DatabaseClock, endpointCreate, eventInsert } from '@hookledger/store'
import { TestReceiver, eventually, testDatabase, type TestDatabase } from '@hookledger/testkit'
import { Dispatcher } from './dispatcher.js'
import { createHttpTransport } from './http-transport.js'

const SKEW_MS = 30_000
const HOLD_MS = 1_000
const ENDPOINTS = 3
/** Each event goes to every endpoint. */
const EVENTS = 2

const cleanup: (() => Promise<void> | void)[] = []
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn()
})

/** A host clock that runs `ms` ahead of the real one. */
const skewed = (ms: number): Clock => ({ now: () => new Date(Date.now() + ms) })

async function twoWorkers(clocks: (db: TestDatabase['db']) => Promise<[Clock, Clock]>) {
  const database = await testDatabase({ poolSize: 8 })
  cleanup.push(() => database.close())
  const secretBox = createSecretBox(generateMasterKey())
  // One receiver per endpoint: its maxConcurrent is that endpoint's requests in flight.
  const receivers = await Promise.all(Array.from({ length: ENDPOINTS }, () => new TestReceiver({ status: 204, delayMs: HOLD_MS }).start()))
  cleanup.push(() => Promise.all(receivers.map((r) => r.close())).then(() => {}))
  for (const r of receivers) {
    const secret = generateWebhookSecret()
    await database.db.transaction().execute((trx) =>
      endpointCreate(trx, { owner_id: 'default', now: new Date(), actor: 'owner:test' }, {
        url: r.url(), description: '', event_types: ['*'], embed_id: null,
        secret_sealed: secretBox.seal(secret), secret_key_id: secretKeyId(secret),
      }),
    )
  }
  for (let i = 0; i < EVENTS; i++) {
    await database.db.transaction().execute((trx) =>
      eventInsert(trx, { owner_id: 'default', event: { id: `evt_${i}`, type: 'booking.created', subject: `booking://${i}`, occurred_at: new Date(), data: {} }, now: new Date(), actor: 'system' }),
    )
  }
  const [clockA, clockB] = await clocks(database.db)
  const worker = (id: string, clock: Clock) => {
    const transport = createHttpTransport({ policy: createEgressPolicy({ allow: ['127.0.0.0/8'] }), timeoutMs: 2_000 })
    const d = new Dispatcher({
      db: database.db, clock, transport, secretBox, catalog: createEventCatalog(),
      embedAdmits: async () => false, workerId: id, concurrency: 8,
      jobTimeoutMs: 3_000, leaseMs: 5_000, pollIntervalMs: 50, maintenanceIntervalMs: 60_000,
    })
    cleanup.push(async () => {
      await d.stop()
      await transport.close()
    })
    return d
  }
  const received = () => receivers.reduce((n, r) => n + r.requests.length, 0)
  return { db: database.db, receivers, a: worker('a', clockA), b: worker('b', clockB), received }
}

describe('two workers, clocks 30 s apart', () => {
  it('on their own clocks, the fast one rescues deliveries the other has just claimed (the hazard)', async () => {
    const w = await twoWorkers(async () => [systemClock, skewed(SKEW_MS)])
    await w.a.start()
    await eventually('worker a holding a request per endpoint', () => w.received() >= ENDPOINTS)
    // a's POSTs are still being answered (the receivers hold them HOLD_MS): their leases are
    // good for 5 s on any honest clock.
    expect((await w.b.maintenanceOnce()).rescued).toBeGreaterThan(0)
  })

  it('on the database clock: no early rescue, no double delivery, never two requests at once to one endpoint', async () => {
    const w = await twoWorkers(async (db) => {
      const a = await DatabaseClock.start(db, { host: systemClock })
      const b = await DatabaseClock.start(db, { host: skewed(SKEW_MS) })
      cleanup.push(() => (a.stop(), b.stop()))
      expect(Math.abs(b.now().getTime() - a.now().getTime())).toBeLessThan(1_000)
      return [a, b]
    })
    await w.a.start()
    await eventually('worker a holding a request per endpoint', () => w.received() >= ENDPOINTS)
    expect((await w.b.maintenanceOnce()).rescued).toBe(0)
    await w.b.start()
    await eventually(
      'every delivery completed',
      async () => (await w.db.selectFrom('deliveries').select('state').where('state', '!=', 'completed').execute()).length === 0,
      { timeoutMs: 20_000 },
    )
    for (const r of w.receivers) {
      const ids = r.requests.map((q) => q.headers['webhook-id'])
      expect(ids.sort()).toEqual(Array.from({ length: EVENTS }, (_, i) => `evt_${i}`))
    }
    expect(w.receivers.map((r) => r.maxConcurrent)).toEqual(Array(ENDPOINTS).fill(1))
    const odd = await w.db.selectFrom('ledger').select('kind').where('kind', 'in', ['delivery.settle_dropped']).execute()
    expect(odd).toEqual([])
    const interrupted = await w.db.selectFrom('delivery_attempts').select('outcome').where('outcome', '=', 'interrupted').execute()
    expect(interrupted).toEqual([])
  })
})
