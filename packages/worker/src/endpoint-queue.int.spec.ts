/**
 * The claim's queue head (`endpoint_queue.ready_at`) after every transition that moves it:
 * enqueue, claim, settle (retry, completion, Retry-After snooze), disable, delete and the
 * discard it leads to, redeliver. After each, the head is the value its definition gives and
 * the replay finds nothing to report; a head edited behind the write primitive's back is caught.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { sql } from 'kysely'
import { DeliveryOutcome, createEgressPolicy, leasedHeadAt, createEventCatalog, systemClock, type AttemptFacts } from '@hookledger/core'
import {
  createPgNotifier,
  deliveryClaim,
  deliverySettle,
  deliverySettleBatch,
  endpointDelete,
  endpointQueueDrift,
  endpointRedeliver,
  endpointUpdate,
  eventInsert,
} from '@hookledger/store'
import { bypassLedgerGuards, engineHarness, type EngineHarness } from '@hookledger/testkit'
import { Dispatcher } from './dispatcher.js'
import { createHttpTransport } from './http-transport.js'

const s = 1_000
let harness: EngineHarness | null = null
afterEach(async () => {
  await harness?.close()
  harness = null
})

describe('the queue head follows every transition', () => {
  it('enqueue, claim, retry, completion, snooze, disable, delete, discard, redeliver', async () => {
    const h = (harness = await engineHarness())
    const { endpoint } = await h.createEndpoint()
    const ctx = () => ({ owner_id: h.owner, now: h.clock.now(), actor: 'owner:test' })
    const readyAt = async () =>
      (await h.db.selectFrom('endpoint_queue').select('ready_at').where('endpoint_id', '=', endpoint.id).executeTakeFirstOrThrow()).ready_at
    const expectHead = async (at: Date | null) => {
      expect(await readyAt()).toEqual(at)
      expect((await h.db.transaction().execute((trx) => endpointQueueDrift(trx, 10))).total).toBe(0)
    }
    const t0 = h.clock.now()
    const at = (ms: number) => new Date(t0.getTime() + ms)
    const facts = (status: number): AttemptFacts => ({ started_at: h.clock.now(), duration_ms: 5, status_code: status, error: null, signed_with: [] })
    const claim = async () => (await deliveryClaim(h.db, { now: h.clock.now(), limit: 10, actor: 'worker:t' })).claimed
    const settle = (c: Awaited<ReturnType<typeof claim>>[number], outcome: DeliveryOutcome) =>
      h.db.transaction().execute((trx) => deliverySettle(trx, [{ delivery: c.delivery, outcome, actor: 'worker:t' }], h.clock.now()))

    await expectHead(null)
    await h.publish({ id: 'evt_1' })
    await h.publish({ id: 'evt_2' })
    await h.dispatcher.fanoutOnce()
    await expectHead(t0) // two due deliveries

    const [first] = await claim()
    await expectHead(leasedHeadAt(first!.delivery.lease_until!)) // leased: ready when the lease ends, on the 2 s grid (0019)
    await settle(first!, DeliveryOutcome.retryScheduled(facts(500), 5 * s))
    await expectHead(t0) // released; the other is still due

    const [second] = await claim()
    expect(second!.delivery.id).not.toBe(first!.delivery.id)
    await settle(second!, DeliveryOutcome.completed(facts(200)))
    await expectHead(at(5 * s)) // only the retry is left

    h.clock.set(at(5 * s))
    const [retried] = await claim()
    await settle(retried!, DeliveryOutcome.snoozedForRetryAfter(facts(429), 60 * s))
    await expectHead(at(65 * s))

    await h.db.transaction().execute((trx) => endpointUpdate(trx, ctx(), endpoint.id, { enabled: false }))
    await expectHead(at(65 * s)) // disabled, still waiting: ready, to be discarded
    await h.db.transaction().execute((trx) => endpointUpdate(trx, ctx(), endpoint.id, { enabled: true }))
    await h.db.transaction().execute((trx) => endpointDelete(trx, ctx(), endpoint.id))
    h.clock.set(at(65 * s))
    expect(await claim()).toEqual([]) // discarded at claim: endpoint_deleted
    await expectHead(null) // off the claim path for good

    const [row] = await h.db.selectFrom('deliveries').select(['state', 'last_error']).where('id', '=', first!.delivery.id).execute()
    expect(row).toMatchObject({ state: 'discarded', last_error: 'endpoint_deleted' })
    expect((await h.replay()).differences).toEqual([])
  })

  it('a lease handed on within one grid step leaves the queue row as it was (0019)', async () => {
    const h = (harness = await engineHarness())
    const { endpoint } = await h.createEndpoint()
    await h.publish({ id: 'evt_1' })
    await h.publish({ id: 'evt_2' })
    await h.publish({ id: 'evt_3' })
    await h.dispatcher.fanoutOnce()
    const queueRow = () =>
      sql<{ ready_at: Date; version: string }>`select ready_at, xmin::text || ctid::text as version from endpoint_queue where endpoint_id = ${endpoint.id}::uuid`
        .execute(h.db)
        .then((r) => r.rows[0]!)
    const busyUntil = async () => (await h.db.selectFrom('endpoints').select('busy_until').where('id', '=', endpoint.id).executeTakeFirstOrThrow()).busy_until
    const facts: AttemptFacts = { started_at: h.clock.now(), duration_ms: 5, status_code: 200, error: null, signed_with: [] }

    const [first] = (await deliveryClaim(h.db, { now: h.clock.now(), limit: 1, actor: 'worker:t', leaseMs: 17 * s })).claimed
    const leased = await queueRow()
    expect(leased.ready_at).toEqual(leasedHeadAt(first!.delivery.lease_until!))
    // A second later the settle completes the first and claims the next under a fresh lease.
    h.clock.advance(s)
    await deliverySettleBatch(h.db, [{ delivery: first!.delivery, outcome: DeliveryOutcome.completed(facts), actor: 'worker:t' }], h.clock.now(), {
      actor: 'worker:t',
      leaseMs: 17 * s,
    })
    expect((await busyUntil())!.getTime()).toBe(h.clock.now().getTime() + 17 * s) // the lease moved…
    expect(await queueRow()).toEqual(leased) // …its head did not: the row was not rewritten
    expect((await h.replay()).differences).toEqual([])
  })

  it('redeliver puts the endpoint back on the claim path', async () => {
    const h = (harness = await engineHarness({ reply: { status: 404 } }))
    const { endpoint } = await h.createEndpoint()
    await h.publish({ id: 'evt_gone' })
    await h.step()
    expect((await h.deliveryOf('evt_gone')).state).toBe('discarded')
    const q = () => h.db.selectFrom('endpoint_queue').select('ready_at').where('endpoint_id', '=', endpoint.id).executeTakeFirstOrThrow()
    expect((await q()).ready_at).toBeNull()
    await h.db.transaction().execute((trx) => endpointRedeliver(trx, { owner_id: h.owner, now: h.clock.now(), actor: 'owner:test' }, endpoint.id))
    expect((await q()).ready_at).toEqual(h.clock.now())
    expect((await h.replay()).differences).toEqual([])
  })

  it('a head changed behind the write primitive is reported by the replay', async () => {
    const h = (harness = await engineHarness())
    const { endpoint } = await h.createEndpoint()
    await h.publish({ id: 'evt_hidden' })
    await h.dispatcher.fanoutOnce()
    await bypassLedgerGuards(h.db, (trx) => sql`update endpoint_queue set ready_at = null where endpoint_id = ${endpoint.id}::uuid`.execute(trx))
    const report = await h.replay()
    expect(report.differences).toEqual([
      { table: 'endpoint_queue', key: endpoint.id, kind: 'changed', columns: ['ready_at'], live: { ready_at: null }, replayed: { ready_at: h.clock.now().toISOString() } },
    ])
    expect(report.differenceCounts.endpoint_queue.changed).toBe(1)
  })
})

describe('the queue head under concurrent writers', () => {
  it('a settle racing the fan-out of the next event on the same endpoint leaves that event on the queue', async () => {
    // Each event is published the moment the previous one reaches the receiver, so its fan-out
    // runs while the previous delivery is being settled: two transactions on one endpoint's
    // queue head. Before fan-out locked its endpoints, the later commit could leave the head
    // empty with a delivery waiting (it stalled until a poll that never found it).
    const h = (harness = await engineHarness())
    await h.createEndpoint()
    const notifier = createPgNotifier(h.url, () => {})
    const transport = createHttpTransport({ policy: createEgressPolicy({ allow: ['127.0.0.0/8'] }), timeoutMs: 2_000 })
    const live = new Dispatcher({
      db: h.db, clock: systemClock, transport, secretBox: h.secretBox, catalog: createEventCatalog(), embedAdmits: async () => false,
      workerId: 'live', notifier, jobTimeoutMs: 15_000, leaseMs: 17_000,
    })
    await live.start()
    try {
      for (let i = 0; i < 20; i++) {
        await h.db.transaction().execute((trx) =>
          eventInsert(trx, { owner_id: h.owner, event: { id: `evt_race_${i}`, type: 'booking.created', subject: 's', occurred_at: new Date(), data: {} }, now: new Date(), actor: 'system' }),
        )
        await h.receiver.waitFor(i + 1, 5_000)
      }
    } finally {
      await live.stop()
      await transport.close()
      await notifier.close()
    }
    expect((await h.db.transaction().execute((trx) => endpointQueueDrift(trx, 10))).total).toBe(0)
  })
})
