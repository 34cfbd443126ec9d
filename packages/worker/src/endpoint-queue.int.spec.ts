/**
 * The claim's queue head (`endpoint_queue.ready_at`) after every transition that moves it:
 * enqueue, claim, settle (retry, completion, Retry-After snooze), disable, delete and the
 * discard it leads to, redeliver. After each, the head is the value its definition gives and
 * the replay finds nothing to report; a head edited behind the write primitive's back is caught.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { sql } from 'kysely'
import { DeliveryOutcome, type AttemptFacts } from '@hookledger/core'
import { deliveryClaim, deliverySettle, endpointDelete, endpointQueueDrift, endpointRedeliver, endpointUpdate } from '@hookledger/store'
import { engineHarness, type EngineHarness } from '@hookledger/testkit'

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
    await expectHead(first!.delivery.lease_until) // leased: ready when the lease ends
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
    await sql`update endpoint_queue set ready_at = null where endpoint_id = ${endpoint.id}::uuid`.execute(h.db)
    const report = await h.replay()
    expect(report.differences).toEqual([
      { table: 'endpoint_queue', key: endpoint.id, kind: 'changed', columns: ['ready_at'], live: { ready_at: null }, replayed: { ready_at: h.clock.now().toISOString() } },
    ])
    expect(report.differenceCounts.endpoint_queue.changed).toBe(1)
  })
})
