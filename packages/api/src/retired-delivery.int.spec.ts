import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { engineHarness, type EngineHarness, testApi, type TestApi } from '@hookledger/testkit'

const day = 24 * 3_600_000

let h: EngineHarness
let api: TestApi
let admin: string

beforeEach(async () => {
  // The real date: receivers verify the signature's timestamp against their own clock.
  h = await engineHarness({ start: new Date().toISOString() })
  api = testApi(h.db, { clock: h.clock, secretBox: h.secretBox })
  admin = await api.token(h.owner, ['admin', 'publish'])
})
afterEach(() => h.close())

/** One delivery, completed, then retired by the maintenance pass 31 days later. */
async function retiredDelivery() {
  const created = await api.call('POST', '/api/admin/webhooks', { token: admin, body: { url: h.receiver.url(), event_types: ['*'] } })
  const endpointId = created.body.endpoint.id as string
  await api.call('POST', '/api/events', { token: admin, body: { id: 'evt_old', type: 'booking.created', subject: 'booking://1' } })
  await h.step()
  const delivery = await h.deliveryOf('evt_old')
  h.clock.advance(31 * day)
  expect((await h.dispatcher.maintenanceOnce()).retired).toBe(1)
  return { endpointId, delivery }
}

describe('a retired delivery, through the owner API', () => {
  it('leaves the delivery log; its attempts, read from the ledger, and its receipt still answer', async () => {
    const { endpointId, delivery } = await retiredDelivery()
    const list = await api.call('GET', `/api/admin/webhooks/${endpointId}/deliveries`, { token: admin })
    expect(list.status).toBe(200)
    expect(list.body.data).toEqual([])

    const attempts = await api.call('GET', `/api/admin/deliveries/${delivery.id}/attempts`, { token: admin })
    expect(attempts.status, attempts.text).toBe(200)
    expect(attempts.body).toMatchObject({
      retired: true,
      delivery: { id: delivery.id, state: 'completed', attempts: 1, updated_at: delivery.updated_at.toISOString() },
    })
    expect(attempts.body.data.map((a: { attempt: number; status_code: number }) => [a.attempt, a.status_code])).toEqual([[1, 204]])

    const receipt = await api.call('GET', `/api/admin/deliveries/${delivery.id}/receipt`, { token: admin })
    expect(receipt.status).toBe(200)
    // The fan-out decision that enqueued it is among its rows (ledger format 3).
    expect(receipt.body.unsealed.map((r: { kind: string }) => r.kind)).toEqual([
      'fanout.decided', 'delivery.claimed', 'delivery.attempted',
    ])
  })

  it('answers 404 to another owner, and once its endpoint is deleted', async () => {
    const { endpointId, delivery } = await retiredDelivery()
    const stranger = await api.token('someone_else', ['admin'])
    expect((await api.call('GET', `/api/admin/deliveries/${delivery.id}/attempts`, { token: stranger })).status).toBe(404)
    expect((await api.call('DELETE', `/api/admin/webhooks/${endpointId}`, { token: admin })).status).toBe(200)
    expect((await api.call('GET', `/api/admin/deliveries/${delivery.id}/attempts`, { token: admin })).status).toBe(404)
    // Nothing of the endpoint is left to settle: the next pass purges it.
    expect((await h.dispatcher.maintenanceOnce()).purged).toBe(1)
    expect((await api.call('GET', `/api/admin/webhooks/${endpointId}`, { token: admin })).status).toBe(404)
    expect((await h.replay()).differences).toEqual([])
  })

  it('a live delivery answers retired: false', async () => {
    await api.call('POST', '/api/admin/webhooks', { token: admin, body: { url: h.receiver.url(), event_types: ['*'] } })
    await api.call('POST', '/api/events', { token: admin, body: { id: 'evt_new', type: 'booking.created', subject: 'booking://2' } })
    await h.step()
    const d = await h.deliveryOf('evt_new')
    const attempts = await api.call('GET', `/api/admin/deliveries/${d.id}/attempts`, { token: admin })
    expect(attempts.body).toMatchObject({ retired: false, delivery: { state: 'completed' } })
  })
})
