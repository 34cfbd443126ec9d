import { afterEach, describe, expect, it } from 'vitest'
import { engineHarness, type EngineHarness } from '@hookledger/testkit'

let h: EngineHarness | null = null
afterEach(async () => {
  await h?.close()
  h = null
})

describe('delivery engine (walking skeleton)', () => {
  it('fans out, claims, signs, POSTs and completes; replay finds no difference', async () => {
    h = await engineHarness()
    const { endpoint } = await h.createEndpoint({ event_types: ['booking.*'] })
    await h.publish({ id: 'evt_a', type: 'booking.created' })
    await h.publish({ id: 'evt_b', type: 'code.issued' })
    const r = await h.step()
    expect(r).toMatchObject({ fannedOut: 2, enqueued: 1, claimed: 1, attempted: 1 })
    expect(h.receiver.requests).toHaveLength(1)
    expect(h.receiver.requests[0]!.headers['webhook-id']).toBe('evt_a')
    const rows = await h.db.selectFrom('deliveries').selectAll().execute()
    expect(rows).toMatchObject([{ endpoint_id: endpoint.id, state: 'completed', attempts: 1 }])
    const report = await h.replay()
    expect(report.differences).toEqual([])
  })
})
