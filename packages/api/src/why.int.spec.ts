import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { engineHarness, type EngineHarness, testApi, type TestApi } from '@hookledger/testkit'

let h: EngineHarness
let api: TestApi
let admin: string

beforeEach(async () => {
  h = await engineHarness({ start: '2026-03-01T00:00:00Z' })
  api = testApi(h.db, { clock: h.clock, secretBox: h.secretBox })
  admin = await api.token(h.owner, ['admin', 'publish'])
})
afterEach(() => h.close())

const get = (path: string, token = admin) => api.call('GET', path, { token })
const reasonOf = async (eventId: string) => {
  const d = await h.deliveryOf(eventId)
  return (await get(`/api/admin/deliveries?endpoint_id=${d.endpoint_id}`)).body.data.find((x: any) => x.event_id === eventId).waiting_reason
}

describe('waiting_reason', () => {
  it('says backoff n of 18, Retry-After, cool-down, and until when', async () => {
    h.receiver.answer({ status: 500 })
    await h.createEndpoint()
    await h.publish({ id: 'evt_a' })
    await h.step()
    const backoff = await reasonOf('evt_a')
    expect(backoff).toMatchObject({ kind: 'backoff', attempt: 1, of: 18, until: '2026-03-01T00:00:05.000Z' })
    expect(backoff.text).toBe('backoff after attempt 1 of 18, until 2026-03-01T00:00:05.000Z')
    // The endpoint is failing now: a new event waits out the cool-down.
    await h.publish({ id: 'evt_b' })
    await h.step()
    expect(await reasonOf('evt_b')).toMatchObject({ kind: 'cool_down', until: '2026-03-01T00:05:00.000Z' })

    h.receiver.answer({ status: 429, headers: { 'retry-after': '120' } })
    h.clock.advance(5_000)
    await h.step()
    expect(await reasonOf('evt_a')).toMatchObject({ kind: 'retry_after', retry_after_ms: 120_000, until: '2026-03-01T00:02:05.000Z' })
    // The snooze is said as one (no attempt spent), with the budget it used.
    const snoozed = (await get(`/api/admin/deliveries?endpoint_id=${(await h.deliveryOf('evt_a')).endpoint_id}`)).body.data.find((x: any) => x.event_id === 'evt_a')
    expect(snoozed).toMatchObject({ attempts: 1, snoozes: 1, snoozed_ms: 120_000 })
    const completed = await get(`/api/admin/deliveries?state=completed`)
    expect(completed.body.data.every((d: any) => d.waiting_reason === null)).toBe(true)
  })
})

describe('events.explain', () => {
  it('says, for every endpoint, what happened to the event and why', async () => {
    h.receiver.answer({ status: 204 })
    const got = (await h.createEndpoint({ event_types: ['booking.*'] })).endpoint
    const other = (await h.createEndpoint({ event_types: ['access_request.*'] })).endpoint
    const off = (await h.createEndpoint({ event_types: ['*'] })).endpoint
    await api.call('PATCH', `/api/admin/webhooks/${off.id}`, { token: admin, body: { enabled: false } })
    const gone = (await h.createEndpoint({ event_types: ['*'] })).endpoint
    await api.call('DELETE', `/api/admin/webhooks/${gone.id}`, { token: admin })
    await h.publish({ id: 'evt_x', type: 'booking.created' })
    const early = await get('/api/admin/events/evt_x/explain')
    expect(early.status, early.text).toBe(200)
    expect(early.body.decided_at).toBeNull()
    expect(early.body.data.map((v: any) => v.verdict)).toEqual(['not_fanned_out_yet', 'not_fanned_out_yet', 'not_fanned_out_yet', 'not_fanned_out_yet'])
    await h.step()
    const late = (await h.createEndpoint({ event_types: ['*'] })).endpoint

    const res = await get('/api/admin/events/evt_x/explain')
    expect(res.body.event).toMatchObject({ id: 'evt_x', type: 'booking.created' })
    const byId = Object.fromEntries(res.body.data.map((v: any) => [v.endpoint_id, v]))
    expect(byId[got.id]).toMatchObject({ verdict: 'completed', delivery_id: (await h.deliveryOf('evt_x')).id, retired: false })
    expect(byId[other.id]).toMatchObject({ verdict: 'not_subscribed', event_types: ['access_request.*'] })
    expect(byId[off.id]).toMatchObject({ verdict: 'endpoint_disabled', reason: 'disabled_by_owner' })
    expect(byId[gone.id]).toMatchObject({ verdict: 'endpoint_deleted', deleted: true })
    expect(byId[late.id]).toMatchObject({ verdict: 'created_after_event' })
  })

  it('another owner’s event, or an unknown one, is a 404; a malformed id a 400 naming it', async () => {
    await h.createEndpoint()
    await h.publish({ id: 'evt_mine' })
    await h.step()
    const stranger = await api.token('someone_else', ['admin'])
    expect((await get('/api/admin/events/evt_mine/explain', stranger)).status).toBe(404)
    expect((await get('/api/admin/events/evt_nope/explain')).status).toBe(404)
    const bad = await get('/api/admin/events/a.b/explain')
    expect(bad.status).toBe(400)
    expect(bad.body.field ?? JSON.stringify(bad.body)).toContain('id')
  })
})
