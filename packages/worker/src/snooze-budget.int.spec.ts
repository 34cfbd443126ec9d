/**
 * The snooze budget on a real database: a receiver that answers `429 Retry-After: 0` forever
 * gets the budget's snoozes, then counted attempts on the usual backoff, then the discard.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { MAX_ATTEMPTS, RETRY_AFTER_FLOOR_MS } from '@hookledger/core'
import { endpointRedeliver } from '@hookledger/store'
import { engineHarness, type EngineHarness } from '@hookledger/testkit'

let harness: EngineHarness | null = null
afterEach(async () => {
  await harness?.close()
  harness = null
})

/** Steps the fake clock to each next attempt until the delivery settles for good. */
async function driveToTheEnd(h: EngineHarness, eventId: string): Promise<number> {
  let requests = 0
  for (let i = 0; i < 500; i++) {
    const r = await h.step()
    requests += r.attempted
    const d = await h.deliveryOf(eventId)
    if (d.state === 'completed' || d.state === 'discarded') return requests
    h.clock.set(d.next_attempt_at!)
  }
  throw new Error('the delivery never settled')
}

describe('the snooze budget', () => {
  it('Retry-After: 0 forever → the budget of snoozes, then 18 counted attempts, then discarded; the replay agrees', async () => {
    const h = (harness = await engineHarness({ reply: { status: 429, headers: { 'retry-after': '0' } }, snoozeBudget: { maxCount: 5, maxTotalMs: 3_600_000 } }))
    await h.createEndpoint()
    await h.publish({ id: 'evt_ra0' })
    const requests = await driveToTheEnd(h, 'evt_ra0')
    expect(requests).toBe(5 + MAX_ATTEMPTS)
    const d = await h.deliveryOf('evt_ra0')
    expect(d).toMatchObject({ state: 'discarded', attempts: MAX_ATTEMPTS, snoozes: 5, snoozed_ms: 5 * RETRY_AFTER_FLOOR_MS })
    const kinds = (await h.ledgerOf('delivery_id', d.id)).map((e) => e.kind)
    expect(kinds.filter((k) => k === 'delivery.snoozed')).toHaveLength(5)
    expect(kinds.filter((k) => k === 'delivery.retry_scheduled')).toHaveLength(MAX_ATTEMPTS - 1)
    expect((await h.replay()).differences).toEqual([])
  })

  it('garbage in Retry-After takes the floor and spends the budget like a 0', async () => {
    const h = (harness = await engineHarness({ reply: { status: 503, headers: { 'retry-after': 'whenever' } }, snoozeBudget: { maxCount: 2, maxTotalMs: 3_600_000 } }))
    await h.createEndpoint()
    await h.publish({ id: 'evt_garbage' })
    const t0 = h.clock.now().getTime()
    await h.step()
    const first = await h.deliveryOf('evt_garbage')
    expect(first).toMatchObject({ state: 'pending', attempts: 0, snoozes: 1 })
    expect(first.next_attempt_at!.getTime() - t0).toBe(RETRY_AFTER_FLOOR_MS)
    h.clock.set(first.next_attempt_at!)
    await h.step()
    h.clock.set((await h.deliveryOf('evt_garbage')).next_attempt_at!)
    await h.step()
    expect(await h.deliveryOf('evt_garbage')).toMatchObject({ state: 'retryable', attempts: 1, snoozes: 2 })
  })

  it('a redelivery starts its run with a fresh budget: the counts are those since the run began', async () => {
    // Two snoozes and a 404, a redelivery, one snooze, completed.
    const h = (harness = await engineHarness())
    const { endpoint } = await h.createEndpoint()
    h.receiver.enqueue(
      { status: 429, headers: { 'retry-after': '30' } },
      { status: 429, headers: { 'retry-after': '60' } },
      { status: 404 },
      { status: 503, headers: { 'retry-after': '45' } },
      { status: 200 },
    )
    await h.publish({ id: 'evt_hist' })
    await driveToTheEnd(h, 'evt_hist')
    expect(await h.deliveryOf('evt_hist')).toMatchObject({ state: 'discarded', snoozes: 2, snoozed_ms: 90_000 })
    await h.db.transaction().execute((trx) => endpointRedeliver(trx, { owner_id: h.owner, now: h.clock.now(), actor: 'owner:test' }, endpoint.id))
    expect(await h.deliveryOf('evt_hist')).toMatchObject({ state: 'pending', run: 2, snoozes: 0, snoozed_ms: 0 })
    await driveToTheEnd(h, 'evt_hist')
    expect(await h.deliveryOf('evt_hist')).toMatchObject({ state: 'completed', run: 2, snoozes: 1, snoozed_ms: 45_000 })
    expect((await h.replay()).differences).toEqual([])
  })
})
