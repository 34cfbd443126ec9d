/**
 * owners.list's usage on a real database, on the fake clock: the backlog counts waiting and
 * running deliveries (through the owner's endpoints), the last 24 h count deliveries made and
 * attempts recorded in that window only, and another owner's work is never counted; a page
 * counts them up to a cap and says which reached it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { engineHarness, type EngineHarness } from '@hookledger/testkit'
import { deliveryClaim } from './delivery/delivery-claim.js'
import { ownersWithUsage } from './owner-commands.js'

let h: EngineHarness

beforeAll(async () => {
  h = await engineHarness({ start: '2026-03-01T00:00:00Z', reply: { status: 204 } })
  await h.createEndpoint()
  await h.createEndpoint()
})
afterAll(async () => {
  await h?.close()
})

const usageOf = async (owner: string) => (await ownersWithUsage(h.db, h.clock.now(), [owner]))[0]?.usage

describe('owner usage', () => {
  it('counts waiting and running deliveries as backlog, and the day’s deliveries and attempts', async () => {
    for (let i = 0; i < 3; i++) await h.publish()
    await h.dispatcher.fanoutOnce()
    // Three events to two endpoints: six waiting.
    expect(await usageOf(h.owner)).toEqual({ endpoints: 2, backlog: 6, deliveries_24h: 6, attempts_24h: 0, at_least: [] })
    // One claimed per endpoint: running, still backlog.
    const { claimed } = await deliveryClaim(h.db, { now: h.clock.now(), limit: 10, actor: 'worker:test' })
    expect(claimed).toHaveLength(2)
    expect(await usageOf(h.owner)).toEqual({ endpoints: 2, backlog: 6, deliveries_24h: 6, attempts_24h: 0, at_least: [] })
    expect(await usageOf('someone-else')).toBeUndefined()
  })

  it('leaves delivered work out of the backlog, and the window moves with the clock', async () => {
    // Deliver everything: the claim above is rescued once its lease ran out, then each step
    // delivers one per endpoint (bounded, so a regression fails instead of hanging).
    const unfinished = async () => (await h.db.selectFrom('deliveries').select('id').where('state', 'in', ['pending', 'retryable', 'running']).execute()).length
    for (let i = 0; i < 40 && (await unfinished()) > 0; i++) {
      h.clock.advance(10 * 60_000)
      await h.dispatcher.maintenanceOnce()
      await h.step()
    }
    expect(await unfinished()).toBe(0)
    const after = await usageOf(h.owner)
    expect(after).toMatchObject({ endpoints: 2, backlog: 0, deliveries_24h: 6 })
    expect(after!.attempts_24h).toBeGreaterThanOrEqual(6)
    h.clock.advance(25 * 3600_000)
    expect(await usageOf(h.owner)).toEqual({ endpoints: 2, backlog: 0, deliveries_24h: 0, attempts_24h: 0, at_least: [] })
  })

  it('counted up to a cap (a page of owners), says which counts reached it; a count at the cap is exact', async () => {
    for (let i = 0; i < 3; i++) await h.publish()
    await h.dispatcher.fanoutOnce()
    const upTo = async (countUpTo: number) => (await ownersWithUsage(h.db, h.clock.now(), [h.owner], { countUpTo }))[0]!.usage
    // Six waiting, six made today, none attempted.
    expect(await upTo(5)).toEqual({ endpoints: 2, backlog: 5, deliveries_24h: 5, attempts_24h: 0, at_least: ['backlog', 'deliveries_24h'] })
    expect(await upTo(6)).toEqual({ endpoints: 2, backlog: 6, deliveries_24h: 6, attempts_24h: 0, at_least: [] })
    expect(await usageOf(h.owner)).toEqual({ endpoints: 2, backlog: 6, deliveries_24h: 6, attempts_24h: 0, at_least: [] })
  })
})
