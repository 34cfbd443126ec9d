/**
 * An endpoint's rate limit against the real claim (issue 22 item 1): the claim never takes a
 * delivery the bucket would refuse, the queue head waits for the bucket (so the claim does not
 * even read a limited endpoint early), waiting spends no attempt, and replay reproduces the
 * bucket (`rate_tat`) and the queue from the ledger.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { DeliveryOutcome, type AttemptFacts } from '@hookledger/core'
import { deliveryClaim, deliverySettle, endpointQueueDrift, endpointUpdate } from '@hookledger/store'
import { engineHarness, type EngineHarness } from '@hookledger/testkit'

let harness: EngineHarness | null = null
afterEach(async () => {
  await harness?.close()
  harness = null
})

describe('a rate-limited endpoint', () => {
  it('is claimed no faster than its bucket allows, without spending attempts, and replays clean', async () => {
    const h = (harness = await engineHarness())
    const { endpoint } = await h.createEndpoint()
    const ctx = () => ({ owner_id: h.owner, now: h.clock.now(), actor: 'owner:test' })
    // 4 per second (250 ms apart), two at once.
    await h.db.transaction().execute((trx) => endpointUpdate(trx, ctx(), endpoint.id, { rate_limit: { per_second: 4, burst: 2, adaptive: false } }))
    for (let i = 1; i <= 5; i++) await h.publish({ id: `evt_${i}` })
    await h.dispatcher.fanoutOnce()
    const t0 = h.clock.now()
    const at = (ms: number) => new Date(t0.getTime() + ms)
    const facts = (): AttemptFacts => ({ started_at: h.clock.now(), duration_ms: 1, status_code: 200, error: null, signed_with: [] })
    const readyAt = async () =>
      (await h.db.selectFrom('endpoint_queue').select('ready_at').where('endpoint_id', '=', endpoint.id).executeTakeFirstOrThrow()).ready_at
    const bucket = async () => (await h.db.selectFrom('endpoints').select('rate_tat').where('id', '=', endpoint.id).executeTakeFirstOrThrow()).rate_tat
    const noDrift = async () => expect((await h.db.transaction().execute((trx) => endpointQueueDrift(trx, 10))).total).toBe(0)
    const claimOne = async () => {
      const { claimed } = await deliveryClaim(h.db, { now: h.clock.now(), limit: 10, actor: 'worker:t' })
      expect(claimed.length).toBeLessThanOrEqual(1) // one lease per endpoint, whatever the limit
      for (const c of claimed) {
        await h.db.transaction().execute((trx) =>
          deliverySettle(trx, [{ delivery: c.delivery, outcome: DeliveryOutcome.completed(facts()), actor: 'worker:t' }], h.clock.now()),
        )
      }
      return claimed.length
    }

    // The burst: two at t0, then the bucket is empty until t0 + 250 ms.
    expect(await claimOne()).toBe(1)
    expect(await bucket()).toEqual(at(250))
    expect(await claimOne()).toBe(1)
    expect(await bucket()).toEqual(at(500))
    expect(await readyAt()).toEqual(at(250)) // tat 500 - (2 - 1) × 250
    await noDrift()
    expect(await claimOne()).toBe(0) // not ready: the claim does not even read it

    h.clock.set(at(249))
    expect(await claimOne()).toBe(0)
    h.clock.set(at(250))
    expect(await claimOne()).toBe(1)
    expect(await bucket()).toEqual(at(750))
    expect(await readyAt()).toEqual(at(500))
    h.clock.set(at(500))
    expect(await claimOne()).toBe(1)
    expect(await claimOne()).toBe(0)
    // An idle bucket refills, but never beyond its burst.
    h.clock.set(at(10_000))
    expect(await claimOne()).toBe(1)
    expect(await readyAt()).toBeNull() // all five sent

    const rows = await h.db.selectFrom('deliveries').select(['state', 'attempts', 'snoozes']).where('endpoint_id', '=', endpoint.id).execute()
    expect(rows).toHaveLength(5)
    for (const r of rows) expect(r).toMatchObject({ state: 'completed', attempts: 1 })
    await noDrift()
    expect((await h.replay()).differences).toEqual([])
  })

  it('at 1/s the next delivery stays pending, never attempted, until the bucket refills', async () => {
    const h = (harness = await engineHarness())
    const { endpoint } = await h.createEndpoint()
    const ctx = () => ({ owner_id: h.owner, now: h.clock.now(), actor: 'owner:test' })
    await h.db.transaction().execute((trx) => endpointUpdate(trx, ctx(), endpoint.id, { rate_limit: { per_second: 1, burst: 1, adaptive: false } }))
    await h.publish({ id: 'evt_a' })
    await h.publish({ id: 'evt_b' })
    await h.dispatcher.fanoutOnce()
    const t0 = h.clock.now()
    const first = (await deliveryClaim(h.db, { now: t0, limit: 10, actor: 'worker:t' })).claimed
    expect(first).toHaveLength(1)
    const facts: AttemptFacts = { started_at: t0, duration_ms: 1, status_code: 200, error: null, signed_with: [] }
    await h.db.transaction().execute((trx) =>
      deliverySettle(trx, [{ delivery: first[0]!.delivery, outcome: DeliveryOutcome.completed(facts), actor: 'worker:t' }], t0),
    )
    // The bucket empties until t0 + 1 s: the other delivery stays pending, never attempted.
    const other = await h.db.selectFrom('deliveries').select(['state', 'attempts']).where('endpoint_id', '=', endpoint.id).where('state', '=', 'pending').executeTakeFirstOrThrow()
    expect(other).toMatchObject({ state: 'pending', attempts: 0 })
    expect((await deliveryClaim(h.db, { now: new Date(t0.getTime() + 999), limit: 10, actor: 'worker:t' })).claimed).toHaveLength(0)
    expect((await deliveryClaim(h.db, { now: new Date(t0.getTime() + 1000), limit: 10, actor: 'worker:t' })).claimed).toHaveLength(1)
    expect((await h.replay()).differences).toEqual([])
  })

  it('adaptive: a 429 halves the rate the claim paces by, 2xx answers bring it back; replay moves it the same', async () => {
    const h = (harness = await engineHarness({ reply: (_req, i) => ({ status: i === 0 ? 429 : 204 }) }))
    const { endpoint } = await h.createEndpoint()
    const ctx = () => ({ owner_id: h.owner, now: h.clock.now(), actor: 'owner:test' })
    await h.db.transaction().execute((trx) => endpointUpdate(trx, ctx(), endpoint.id, { rate_limit: { per_second: 10, burst: 1, adaptive: true } }))
    for (let i = 1; i <= 3; i++) await h.publish({ id: `evt_${i}` })
    const rate = async () => (await h.endpointOf(endpoint.id)).rate_adapted_per_second
    await h.step() // the 429 (no Retry-After: a retry), the rate halves to 5/s
    expect(await rate()).toBe(5)
    // The bucket the 429's claim left lets the next send through at t0 + 100 ms (10/s); that
    // send moves it on at the adapted 5/s: the one after waits 200 ms, not 100.
    h.clock.advance(100)
    expect(await h.step()).toMatchObject({ claimed: 1 })
    expect(await rate()).toBeCloseTo(5 * 1.05 + 0.1, 9)
    h.clock.advance(199)
    expect(await h.step()).toMatchObject({ claimed: 0 })
    h.clock.advance(1)
    expect(await h.step()).toMatchObject({ claimed: 1 })
    expect((await h.replay()).differences).toEqual([])
  })
})

