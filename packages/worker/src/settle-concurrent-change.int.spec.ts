/**
 * The settle (`deliverySettleBatch`) when rows changed between the claim and the outcome. It
 * writes first on the rows the claim left (optimistic); a moved version or lease refuses that
 * write, and it decides again on the rows as they are now: an owner's edit stays, a rescued
 * delivery's late outcome is dropped (and kept in the ledger), a lease another claim took after
 * this one expired stays with it.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { JOB_TIMEOUT_MS } from '@hookledger/core'
import { deliveryClaim, deliveryRescue, deliverySettleBatch, endpointUpdate, type ClaimedDelivery } from '@hookledger/store'
import { completedSettlement, engineHarness, type EngineHarness } from '@hookledger/testkit'

let h: EngineHarness
afterEach(async () => h?.close())

async function claimOne(h: EngineHarness, events: string[]): Promise<ClaimedDelivery> {
  for (const id of events) await h.publish({ id })
  await h.dispatcher.fanoutOnce()
  const { claimed } = await deliveryClaim(h.db, { now: h.clock.now(), limit: 1, actor: 'worker:w' })
  expect(claimed).toHaveLength(1)
  return claimed[0]!
}

const next = { actor: 'worker:w', leaseMs: JOB_TIMEOUT_MS }

describe('settle, with the rows changed since the claim or not', () => {
  it('nothing changed since the claim: recorded, and the lease passes to the next due delivery', async () => {
    h = await engineHarness()
    const { endpoint } = await h.createEndpoint()
    const c = await claimOne(h, ['evt_a', 'evt_b'])
    h.clock.advance(1_000)
    const r = await deliverySettleBatch(h.db, [completedSettlement(c, h.clock.now())], h.clock.now(), next)
    expect([...r.recorded]).toEqual([c.delivery.id])
    const other = c.delivery.event_id === 'evt_a' ? 'evt_b' : 'evt_a'
    expect(r.claimed.map((x) => x.delivery.event_id)).toEqual([other])
    // The next claim carries the endpoint as this write left it.
    expect(r.claimed[0]!.endpoint).toEqual(await h.endpointOf(endpoint.id))
    h.clock.advance(1_000)
    const r2 = await deliverySettleBatch(h.db, [completedSettlement(r.claimed[0]!, h.clock.now())], h.clock.now(), next)
    expect(r2.recorded.size).toBe(1)
    expect(await h.deliveryOf(other)).toMatchObject({ state: 'completed' })
    expect((await h.replay()).differences).toEqual([])
  })

  it('the claim read what follows: one statement settles, claims it as read, and reads the one after it', async () => {
    h = await engineHarness()
    await h.createEndpoint()
    const c = await claimOne(h, ['evt_a', 'evt_b', 'evt_c'])
    expect(c.following).toBeDefined()
    h.clock.advance(1_000)
    const following = new Map([[c.delivery.endpoint_id, c.following!]])
    const r = await deliverySettleBatch(h.db, [completedSettlement(c, h.clock.now())], h.clock.now(), { ...next, following })
    expect(r.claimed.map((x) => x.delivery.id)).toEqual([c.following!.delivery.id])
    const third = ['evt_a', 'evt_b', 'evt_c'].find((e) => e !== c.delivery.event_id && e !== c.following!.delivery.event_id)
    expect(r.claimed[0]!.following?.delivery.event_id).toBe(third)
    expect(r.claimed[0]!.delivery).toMatchObject({ state: 'running', claimed_by: 'worker:w' })
    // The row the claim read moved meanwhile: the statement is refused, and the locking way claims the earliest due.
    h.clock.advance(1_000)
    const stale = new Map([[c.delivery.endpoint_id, { ...r.claimed[0]!.following!, delivery: { ...r.claimed[0]!.following!.delivery, updated_at: new Date(0) } }]])
    const r2 = await deliverySettleBatch(h.db, [completedSettlement(r.claimed[0]!, h.clock.now())], h.clock.now(), { ...next, following: stale })
    expect(r2.claimed.map((x) => x.delivery.event_id)).toEqual([third])
    expect((await h.replay()).differences).toEqual([])
  })

  it('the owner edited the endpoint meanwhile: recorded, the edit kept, decided on the endpoint as it is now', async () => {
    h = await engineHarness()
    const { endpoint } = await h.createEndpoint()
    const c = await claimOne(h, ['evt_a', 'evt_b'])
    h.clock.advance(1_000)
    await h.db.transaction().execute((trx) =>
      endpointUpdate(trx, { owner_id: h.owner, now: h.clock.now(), actor: 'owner:test' }, endpoint.id, { description: 'edited in flight', enabled: false }),
    )
    h.clock.advance(1_000)
    const r = await deliverySettleBatch(h.db, [completedSettlement(c, h.clock.now())], h.clock.now(), next)
    expect([...r.recorded]).toEqual([c.delivery.id])
    // Decided on the endpoint as it is now: disabled, so its lease is not passed on.
    expect(r.claimed).toEqual([])
    expect(await h.deliveryOf(c.delivery.event_id)).toMatchObject({ state: 'completed' })
    expect(await h.endpointOf(endpoint.id)).toMatchObject({ description: 'edited in flight', enabled: false, busy_until: null })
    expect((await h.replay()).differences).toEqual([])
  })

  it('the rescuer took the delivery back meanwhile: the late outcome is dropped (and kept in the ledger)', async () => {
    h = await engineHarness()
    await h.createEndpoint()
    const c = await claimOne(h, ['evt_a'])
    h.clock.advance(JOB_TIMEOUT_MS + 1_000)
    expect(await deliveryRescue(h.db, { now: h.clock.now() })).toBe(1)
    const r = await deliverySettleBatch(h.db, [completedSettlement(c, h.clock.now())], h.clock.now(), next)
    expect(r.recorded.size).toBe(0)
    expect(r.entries.map((e) => e.kind)).toEqual(['delivery.settle_dropped'])
    expect(await h.deliveryOf('evt_a')).toMatchObject({ state: 'retryable' })
    expect((await h.replay()).differences).toEqual([])
  })

  it('the lease expired and another claim took the endpoint meanwhile: that claim took the delivery back, the late outcome is kept as dropped and the other lease stays', async () => {
    h = await engineHarness()
    const { endpoint } = await h.createEndpoint()
    for (const id of ['evt_a', 'evt_b']) await h.publish({ id })
    await h.dispatcher.fanoutOnce()
    const first = await deliveryClaim(h.db, { now: h.clock.now(), limit: 1, actor: 'worker:w', leaseMs: 1_000 })
    const a = first.claimed[0]!
    h.clock.advance(2_000)
    const second = await deliveryClaim(h.db, { now: h.clock.now(), limit: 1, actor: 'worker:v' })
    const b = second.claimed[0]!
    expect(b.delivery.endpoint_id).toBe(endpoint.id)
    expect(b.delivery.id).not.toBe(a.delivery.id)
    // The endpoint's version did not move with the lease: only the lease check tells.
    expect(b.endpoint.updated_at).toEqual(a.endpoint.updated_at)
    // The takeover recorded `a` as interrupted (delivery-rescue.ts): its worker's late answer no
    // longer settles it, and is kept in the ledger as dropped.
    expect(await h.deliveryOf(a.delivery.event_id)).toMatchObject({ state: 'retryable', attempts: 1 })
    const r = await deliverySettleBatch(h.db, [completedSettlement(a, h.clock.now())], h.clock.now(), next)
    expect([...r.recorded]).toEqual([])
    expect(r.claimed).toEqual([])
    expect((await h.ledgerOf('delivery_id', a.delivery.id)).map((e) => e.kind).slice(-1)).toEqual(['delivery.settle_dropped'])
    expect(await h.endpointOf(endpoint.id)).toMatchObject({ busy_delivery_id: b.delivery.id, busy_until: b.endpoint.busy_until })
    expect((await h.replay()).differences).toEqual([])
  })

  it('a settlement without the endpoint its claim left settles the locking way', async () => {
    h = await engineHarness()
    await h.createEndpoint()
    const c = await claimOne(h, ['evt_a'])
    const { endpoint: _, ...bare } = completedSettlement(c, h.clock.now())
    const r = await deliverySettleBatch(h.db, [bare], h.clock.now(), next)
    expect([...r.recorded]).toEqual([c.delivery.id])
    expect(await h.deliveryOf('evt_a')).toMatchObject({ state: 'completed' })
  })
})
