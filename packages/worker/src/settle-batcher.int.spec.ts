/**
 * The settle buffer's wait: an outcome may wait as long as `add` says for others to share its
 * transaction, and the earliest deadline of what is queued decides when the batch goes.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { silentLogger } from '@hookledger/core'
import { deliveryClaim, type ClaimedDelivery } from '@hookledger/store'
import { completedSettlement, engineHarness, type EngineHarness } from '@hookledger/testkit'
import { SettleBatcher } from './settle-batcher.js'
import { silentObserver } from './dispatcher-observer.js'

let h: EngineHarness
afterEach(async () => h?.close())

/** Two endpoints, one delivery each, claimed; and a batcher that records its batches' sizes. */
async function twoClaims(): Promise<{ claims: ClaimedDelivery[]; batcher: SettleBatcher; batches: number[] }> {
  h = await engineHarness()
  await h.createEndpoint()
  await h.createEndpoint()
  await h.publish({ id: 'evt_a' })
  await h.dispatcher.fanoutOnce()
  const { claimed } = await deliveryClaim(h.db, { now: h.clock.now(), limit: 2, actor: 'worker:w' })
  expect(claimed).toHaveLength(2)
  const batches: number[] = []
  const batcher = new SettleBatcher({ db: h.db, clock: h.clock, logger: silentLogger, observer: { ...silentObserver, settled: (n) => batches.push(n) } })
  return { claims: claimed, batcher, batches }
}

describe('the settle buffer', () => {
  it('an outcome that may wait is written with the next one that may not, in one transaction', async () => {
    const { claims, batcher, batches } = await twoClaims()
    const first = batcher.add(completedSettlement(claims[0]!, h.clock.now()), { waitMs: 60_000 })
    // Well past the default window: had the first gone by it, it would have gone alone.
    await new Promise((r) => setTimeout(r, 50))
    const second = batcher.add(completedSettlement(claims[1]!, h.clock.now()))
    await Promise.all([first, second])
    expect(batches).toEqual([2])
    const states = await h.db.selectFrom('deliveries').select('state').execute()
    expect(states.map((d) => d.state)).toEqual(['completed', 'completed'])
    expect((await h.replay()).differences).toEqual([])
  })

  it('by default an outcome goes after the flush interval, without company', async () => {
    const { claims, batcher, batches } = await twoClaims()
    await batcher.add(completedSettlement(claims[0]!, h.clock.now()))
    await batcher.add(completedSettlement(claims[1]!, h.clock.now()))
    expect(batches).toEqual([1, 1])
  })

  it('a flush at shutdown writes what may still wait', async () => {
    const { claims, batcher, batches } = await twoClaims()
    const waiting = claims.map((c) => batcher.add(completedSettlement(c, h.clock.now()), { waitMs: 60_000 }))
    await batcher.flush()
    await Promise.all(waiting)
    expect(batches).toEqual([2])
  })
})
