/**
 * hookledger's news to the owner, on the time-travel harness: an endpoint going failing, being
 * disabled 5 days later, recovering, and a delivery given up after its 18th attempt each reach
 * another endpoint of the same owner that subscribed to them by name — and nobody else. The
 * replay stays clean: the news is stored in the settle's own transaction.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { sql } from 'kysely'
import { engineHarness, type EngineHarness } from '@hookledger/testkit'

let harness: EngineHarness | null = null
afterEach(async () => {
  await harness?.close()
  harness = null
})

/** Runs steps at the current time until nothing is left to do now. */
async function settleNow(h: EngineHarness): Promise<void> {
  for (let i = 0; i < 50; i++) {
    const r = await h.step()
    if (r.fannedOut === 0 && r.claimed === 0 && r.settledOnClaim === 0) return
  }
}

/** Jumps to the next due delivery's time; false when nothing waits. */
async function jumpToNext(h: EngineHarness): Promise<boolean> {
  const { rows } = await sql<{ at: Date | null }>`select min(next_attempt_at) as at from deliveries where state in ('pending', 'retryable')`.execute(h.db)
  if (!rows[0]?.at) return false
  if (rows[0].at > h.clock.now()) h.clock.set(rows[0].at)
  return true
}

const news = (h: EngineHarness, path: string) =>
  h.receiver.requests.filter((r) => r.path === path).map((r) => JSON.parse(r.body) as { type: string; subject: string; data: Record<string, string> })

describe('operational events', () => {
  it('failing, then disabled after 5 days: the subscribed endpoint hears both; a `*` endpoint hears neither', async () => {
    const h = (harness = await engineHarness({ reply: (req) => ({ status: req.path === '/broken' ? 500 : 204 }) }))
    const { endpoint: broken } = await h.createEndpoint({ url: h.receiver.url('/broken'), event_types: ['booking.*'] })
    await h.createEndpoint({ url: h.receiver.url('/ops'), event_types: ['webhook.endpoint.*'] })
    await h.createEndpoint({ url: h.receiver.url('/everything'), event_types: ['*'] })
    await h.publish({ id: 'evt_b1', type: 'booking.created' })
    await settleNow(h)
    expect(news(h, '/ops')).toEqual([
      expect.objectContaining({ type: 'webhook.endpoint.failing', subject: `webhook://endpoints/${broken.id}`, data: { endpoint_id: broken.id, failing_since: expect.any(String) } }),
    ])
    // Thin like any event: no content of the booking, only ids and the reason.
    expect(Object.keys(JSON.parse(h.receiver.requests.find((r) => r.path === '/ops')!.body)).sort()).toEqual(['data', 'id', 'occurred_at', 'subject', 'type'])
    while ((await h.endpointOf(broken.id)).enabled && (await jumpToNext(h))) await settleNow(h)
    expect((await h.endpointOf(broken.id)).enabled).toBe(false)
    await settleNow(h)
    expect(news(h, '/ops').map((n) => n.type)).toEqual(['webhook.endpoint.failing', 'webhook.endpoint.disabled'])
    expect(news(h, '/ops')[1]!.data).toEqual({ endpoint_id: broken.id, reason: expect.any(String) })
    // `*` is not a subscription to hookledger's news; only the booking event reached it.
    expect(news(h, '/everything').map((n) => n.type)).toEqual(['booking.created'])
    expect((await h.replay()).differences).toEqual([])
  })

  it('recovered, and a delivery given up after its 18th attempt', async () => {
    // The flaky endpoint answers 500 to one event only: its other deliveries keep it from being
    // disabled (each success recovers it), so the bad one runs out of attempts.
    const h = (harness = await engineHarness({ reply: (req) => ({ status: req.path === '/flaky' && req.headers['webhook-id'] === 'evt_bad' ? 500 : 204 }) }))
    const { endpoint: flaky } = await h.createEndpoint({ url: h.receiver.url('/flaky'), event_types: ['booking.*'] })
    await h.createEndpoint({ url: h.receiver.url('/ops'), event_types: ['webhook.**'] })
    await h.publish({ id: 'evt_bad', type: 'booking.created' })
    await settleNow(h)
    let good = 0
    for (let i = 0; i < 200 && (await h.deliveryOf('evt_bad')).state !== 'discarded'; i++) {
      await h.publish({ id: `evt_good_${good++}`, type: 'booking.cancelled' })
      await settleNow(h)
      if (!(await jumpToNext(h))) break
      await settleNow(h)
    }
    const bad = await h.deliveryOf('evt_bad')
    expect(bad).toMatchObject({ state: 'discarded', attempts: 18, last_error: 'HTTP 500' })
    await settleNow(h)
    const types = news(h, '/ops').map((n) => n.type)
    expect(types).toContain('webhook.endpoint.recovered')
    expect(types.filter((t) => t === 'webhook.delivery.exhausted')).toHaveLength(1)
    const exhausted = news(h, '/ops').find((n) => n.type === 'webhook.delivery.exhausted')!
    expect(exhausted).toMatchObject({ subject: `webhook://deliveries/${bad.id}`, data: { delivery_id: bad.id, endpoint_id: flaky.id, event_id: 'evt_bad', reason: 'max_attempts' } })
    expect((await h.replay()).differences).toEqual([])
  })
})
