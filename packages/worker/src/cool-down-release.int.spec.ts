/**
 * A failing endpoint's new deliveries wait out a 5-minute cool-down before their first attempt;
 * once the endpoint answers 2xx again (recovered), what the cool-down still holds back goes at
 * once, in the same write as the recovery — not 5 minutes after the receiver came back. A
 * Retry-After snooze is the receiver's own request and is kept. Fake clock; never sleeps.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { COOL_DOWN_MS } from '@hookledger/core'
import { engineHarness, type EngineHarness } from '@hookledger/testkit'

let harness: EngineHarness | null = null
afterEach(async () => {
  await harness?.close()
  harness = null
})

describe('the failing cool-down ends with the failure', () => {
  it('held-back deliveries are due the moment the endpoint recovers, in the recovery\'s own write', async () => {
    const hx = (harness = await engineHarness())
    let down = true
    hx.receiver.answer(() => (down ? { status: 500 } : { status: 204 }))
    const { endpoint } = await hx.createEndpoint()
    await hx.publish({ id: 'evt_first' })
    await hx.step() // 500: the endpoint is failing from now, evt_first retried in 5 s
    const t0 = hx.clock.now()
    expect(await hx.endpointOf(endpoint.id)).toMatchObject({ failing_since: t0 })

    // Published while failing: each waits out the cool-down.
    for (const id of ['evt_held_1', 'evt_held_2']) await hx.publish({ id })
    expect(await hx.step()).toMatchObject({ enqueued: 2, claimed: 0 })
    for (const id of ['evt_held_1', 'evt_held_2']) {
      expect((await hx.deliveryOf(id))!.next_attempt_at!.getTime() - t0.getTime()).toBe(COOL_DOWN_MS)
    }

    // The receiver is back: evt_first's retry answers 204, and the endpoint recovers.
    down = false
    hx.clock.set((await hx.deliveryOf('evt_first'))!.next_attempt_at!)
    await hx.step()
    const recoveredAt = hx.clock.now()
    expect(recoveredAt.getTime() - t0.getTime()).toBeLessThan(COOL_DOWN_MS)
    expect(await hx.endpointOf(endpoint.id)).toMatchObject({ failing_since: null })
    for (const id of ['evt_held_1', 'evt_held_2']) {
      const d = (await hx.deliveryOf(id))!
      expect(d.next_attempt_at, id).toEqual(recoveredAt)
      const last = (await hx.ledgerOf('delivery_id', d.id)).at(-1)!
      expect(last).toMatchObject({ kind: 'delivery.cool_down_released', actor: 'system' })
      expect(last.payload).toEqual({ next_attempt_at: recoveredAt.toISOString(), held_until: new Date(t0.getTime() + COOL_DOWN_MS).toISOString() })
    }

    // Without moving the clock, one step per delivery (one in flight per endpoint): both go now.
    await hx.step()
    await hx.step()
    for (const id of ['evt_held_1', 'evt_held_2']) expect(await hx.deliveryOf(id), id).toMatchObject({ state: 'completed', attempts: 1 })
    expect((await hx.replay()).differences).toEqual([])
  })
})
