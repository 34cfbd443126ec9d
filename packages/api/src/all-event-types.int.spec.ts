import { Webhook } from 'standardwebhooks'
import { afterEach, describe, expect, it } from 'vitest'
import { SEED_EVENT_TYPES, systemClock } from '@hookledger/core'
import { createTableEmbedAdmits } from '@hookledger/store'
import { ledgerReplayVerify } from '@hookledger/ledger'
import { TestReceiver, testDatabase, type TestDatabase, testApi } from '@hookledger/testkit'
import { Dispatcher, createHttpTransport } from '@hookledger/worker'

/** Data the scope admits for each type: a published note for the corpus, identifiers otherwise. */
const dataFor = (type: string, n: number) =>
  type === 'corpus.note.changed'
    ? { op: 'updated', note_id: `note_${n}`, published: true, was_published: true }
    : { ref: `ref_${n}` }

const subjectFor = (type: string, n: number) =>
  type === 'corpus.note.changed'
    ? 'wiki://software/project/standmeet/architecture'
    : `${type.split('.')[0]}://item/${n}`

let cleanup: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const fn of cleanup.reverse()) await fn()
  cleanup = []
})

describe('the seed end-to-end test: one event per webhook-visible type, over HTTP, to a real receiver', () => {
  it('a `*` endpoint receives all 39 types, a `booking.*` endpoint exactly the three booking events, all verified', async () => {
    const database: TestDatabase = await testDatabase({ poolSize: 8 })
    const api = testApi(database.db)
    const receiver = await new TestReceiver({ status: 204 }).start()
    const transport = createHttpTransport({ policy: api.deps.egressPolicy, timeoutMs: 5_000 })
    // The real dispatcher on the real clock, driven step by step so the test ends when done.
    const dispatcher = new Dispatcher({
      db: database.db,
      clock: systemClock,
      transport,
      secretBox: api.deps.secretBox,
      catalog: api.deps.catalog,
      embedAdmits: createTableEmbedAdmits(database.db),
      workerId: 'e2e',
      concurrency: 8,
    })
    cleanup.push(
      () => database.close(),
      () => receiver.close(),
      () => transport.close(),
      () => dispatcher.stop(),
    )
    const token = await api.token('acme', ['admin', 'publish'])

    const createEndpoint = async (path: string, event_types: string[]) => {
      const res = await api.call('POST', '/api/admin/webhooks', {
        token,
        body: { url: receiver.url(path), event_types },
      })
      expect(res.status, res.text).toBe(201)
      return res.body as { endpoint: { id: string }; secret: string }
    }
    const all = await createEndpoint('/all', ['*'])
    const bookings = await createEndpoint('/bookings', ['booking.*'])

    expect(SEED_EVENT_TYPES).toHaveLength(39)
    const published = new Map<string, string>() // event id -> type
    for (const [n, { type }] of SEED_EVENT_TYPES.entries()) {
      // `webhook.test` goes only to the endpoint it names: it is sent with send_test below.
      if (type === 'webhook.test') continue
      const id = `evt_${type.replaceAll('.', '_')}`
      const res = await api.call('POST', '/api/events', {
        token,
        body: { id, type, subject: subjectFor(type, n), data: dataFor(type, n) },
      })
      expect(res.status, res.text).toBe(202)
      published.set(id, type)
    }
    const test = await api.call('POST', `/api/admin/webhooks/${all.endpoint.id}/send_test`, {
      token,
    })
    expect(test.status, test.text).toBe(202)
    published.set(test.body.event_id, 'webhook.test')

    const expected = 39 + 3
    for (let i = 0; i < 200 && receiver.requests.length < expected; i++) await dispatcher.runOnce()
    // One more step would show a duplicate, if there were one.
    await dispatcher.runOnce()
    expect(receiver.requests).toHaveLength(expected)

    const verifiers = { '/all': new Webhook(all.secret), '/bookings': new Webhook(bookings.secret) }
    const received: Record<string, string[]> = { '/all': [], '/bookings': [] }
    for (const req of receiver.requests) {
      const verifier = verifiers[req.path as keyof typeof verifiers]
      const event = verifier.verify(req.body, req.headers as Record<string, string>) as {
        id: string
        type: string
        data: unknown
      }
      expect(req.headers['webhook-id']).toBe(event.id)
      expect(published.get(event.id)).toBe(event.type)
      received[req.path]!.push(event.type)
    }
    expect(received['/all']!.sort()).toEqual(SEED_EVENT_TYPES.map((t) => t.type).sort())
    expect(received['/bookings']!.sort()).toEqual([
      'booking.cancelled',
      'booking.created',
      'booking.rescheduled',
    ])

    // The test event's delivery is the one send_test answered, and it completed.
    const rows = await api.call(
      'GET',
      `/api/admin/webhooks/${all.endpoint.id}/deliveries?limit=200`,
      { token },
    )
    const testRow = rows.body.data.find((d: { id: string }) => d.id === test.body.delivery_id)
    expect(testRow).toMatchObject({
      event_id: test.body.event_id,
      event_type: 'webhook.test',
      state: 'completed',
      attempts: 1,
    })
    expect(rows.body.data).toHaveLength(39)

    expect((await ledgerReplayVerify(database.db)).differences).toEqual([])
  })
})
