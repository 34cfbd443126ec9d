import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { sql } from 'kysely'
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

const redeliver = (id: string, token = admin) => api.call('POST', `/api/admin/deliveries/${id}/redeliver`, { token })

async function settled(reply: { status: number }, eventId = 'evt_1') {
  h.receiver.answer(reply)
  await h.createEndpoint()
  await h.publish({ id: eventId })
  await h.step()
  return h.deliveryOf(eventId)
}

describe('deliveries.redeliver: send one delivery again', () => {
  it('a completed delivery gets run 2 with a fresh budget, is sent again, and the ledger keeps lineage and actor', async () => {
    const before = await settled({ status: 204 })
    expect(before.state).toBe('completed')
    const res = await redeliver(before.id)
    expect(res.status, res.text).toBe(200)
    expect(res.body).toMatchObject({ id: before.id, state: 'pending', run: 2, attempts: 0 })
    await h.step()
    expect(h.receiver.requests).toHaveLength(2)
    expect(h.receiver.requests[1]!.headers['webhook-id']).toBe('evt_1')
    expect((await h.deliveryOf('evt_1')).state).toBe('completed')
    const entry = (await h.ledgerOf('delivery_id', before.id)).find((e) => e.kind === 'delivery.redelivered')!
    expect(entry.payload).toMatchObject({ run: 2, previous_run: 1, previous_attempts: 1 })
    expect(entry.actor).toMatch(/^owner:/)
    const history = await api.call('GET', `/api/admin/deliveries/${before.id}/attempts`, { token: admin })
    expect(history.body.runs.map((r: any) => r.run)).toEqual([1, 2])
    expect(history.body.data.map((a: any) => [a.run, a.outcome])).toEqual([[1, 'completed'], [2, 'completed']])
    expect(await h.replay()).toMatchObject({ differences: [] })
  })

  it('a discarded delivery is sent again; the queue head points at it', async () => {
    const before = await settled({ status: 410 })
    expect(before.state).toBe('discarded')
    h.receiver.answer({ status: 204 })
    expect((await redeliver(before.id)).status).toBe(200)
    const head = await sql<{ ready_at: Date | null; expected: Date | null }>`
      select q.ready_at, x.ready_at as expected from endpoint_queue q
      join endpoint_queue_expected x using (endpoint_id) where endpoint_id = ${before.endpoint_id}::uuid
    `.execute(h.db)
    expect(head.rows[0]!.ready_at?.toISOString()).toBe(h.clock.now().toISOString())
    expect(head.rows[0]!.ready_at).toEqual(head.rows[0]!.expected)
    await h.step()
    expect((await h.deliveryOf('evt_1')).state).toBe('completed')
  })

  it('waiting or running → 409 delivery_in_progress; another owner’s → 404; a disabled endpoint → 409', async () => {
    const waiting = await settled({ status: 500 })
    expect(waiting.state).toBe('retryable')
    const res = await redeliver(waiting.id)
    expect(res.status).toBe(409)
    expect(res.body).toMatchObject({ code: 'delivery_in_progress' })
    await sql`select 1`.execute(h.db)
    const other = await api.token('someone_else', ['admin'])
    expect((await redeliver(waiting.id, other)).status).toBe(404)
    expect((await redeliver('00000000-0000-4000-8000-000000000000')).status).toBe(404)

    h.receiver.answer({ status: 204 })
    h.clock.advance(10_000)
    await h.step()
    expect((await h.deliveryOf('evt_1')).state).toBe('completed')
    await api.call('PATCH', `/api/admin/webhooks/${waiting.endpoint_id}`, { token: admin, body: { enabled: false } })
    const off = await redeliver(waiting.id)
    expect(off.status).toBe(409)
    expect(off.body).toMatchObject({ code: 'endpoint_disabled' })
  })
})
