import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { publish, type PublishError } from '@hookledger/publisher'
import { testDatabase, type TestDatabase, testApi } from '@hookledger/testkit'
import { PROBLEM_STATUS } from './problem-status.js'

// `POST /api/events` and `@hookledger/publisher` are two doors to one rule set: each event
// below gets the same answer from both.
let database: TestDatabase
let api: ReturnType<typeof testApi>
let token: string
beforeAll(async () => {
  database = await testDatabase()
  api = testApi(database.db)
  token = await api.token('default', ['publish'])
})
afterAll(() => database.close())

const viaHttp = async (body: Record<string, unknown>) => {
  const r = await api.call('POST', '/api/events', { token, body })
  return r.status >= 400 ? { status: r.status, code: r.body.code } : { status: r.status }
}
const viaPublisher = (body: Record<string, unknown>) =>
  database.db
    .transaction()
    .execute(async (trx) => (await publish(trx, { owner_id: 'default', ...body } as never), { status: 0 }))
    .catch((e: PublishError) => ({ status: PROBLEM_STATUS[e.code], code: e.code }))

const base = { type: 'booking.created', subject: 'booking://1', data: { booking_id: '1' } }

describe('the HTTP path and the publisher answer alike', () => {
  it.each([
    ['an unknown type', { ...base, id: 'p1', type: 'nobody.declared' }, 422, 'unknown_event_type'],
    ['a reserved type', { ...base, id: 'p2', type: 'webhook.delivery.exhausted' }, 422, 'reserved_event_type'],
    ['data over 16 KiB', { ...base, id: 'p3', data: { x: 'y'.repeat(16_400) } }, 413, 'payload_too_large'],
    ['an id with a dot', { ...base, id: 'p.4' }, 400, 'invalid_input'],
    ['an unknown field', { ...base, id: 'p5', extra: true }, 400, 'invalid_input'],
    ['a bad occurred_at', { ...base, id: 'p6', occurred_at: '2020-13-01' }, 400, 'invalid_input'],
  ])('%s', async (_what, body, status, code) => {
    expect(await viaHttp(body)).toEqual({ status, code })
    expect(await viaPublisher(body)).toEqual({ status, code })
  })

  it('a re-published id: same content is a no-op (200), different content the conflict (409), whichever door published first', async () => {
    expect(await viaHttp({ ...base, id: 'evt_http_first' })).toEqual({ status: 202 })
    expect(await viaHttp({ ...base, id: 'evt_http_first' })).toEqual({ status: 200 })
    expect(await viaPublisher({ ...base, id: 'evt_http_first' })).toEqual({ status: 0 })
    expect(await viaHttp({ ...base, id: 'evt_http_first', data: { booking_id: '2' } })).toEqual({ status: 409, code: 'event_id_conflict' })
    expect(await viaPublisher({ ...base, id: 'evt_http_first', subject: 'booking://2' })).toEqual({ status: 409, code: 'event_id_conflict' })
    expect(await viaPublisher({ ...base, id: 'evt_lib_first' })).toEqual({ status: 0 })
    expect(await viaHttp({ ...base, id: 'evt_lib_first' })).toEqual({ status: 200 })
    expect(await viaHttp({ ...base, id: 'evt_lib_first', type: 'booking.cancelled' })).toEqual({ status: 409, code: 'event_id_conflict' })
  })
})
