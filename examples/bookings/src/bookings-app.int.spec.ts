import pg from 'pg'
import { Kysely, PostgresDialect, sql } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import { createEventCatalog } from '@hookledger/core'
import { createPublisher } from '@hookledger/publisher'
import { adminDbOf, engineHarness, type EngineHarness } from '@hookledger/testkit'
import { createBookingsApp } from './bookings-app.js'
import { bookingsTableEnsure, type BookingsDatabase } from './bookings-db.js'

// The example in-process against a test database that hookledger is migrated into, with the
// real dispatcher delivering to a real receiver.
let h: EngineHarness
let appDb: Kysely<BookingsDatabase>
afterEach(async () => {
  await appDb.destroy()
  await h.close()
})

async function start(publisher = createPublisher()) {
  h = await engineHarness()
  // The application's own pool, as hookledger's publisher role (what `hookledger database-url`
  // prints): default search_path, its table in public, which the embedded default lets it create.
  await sql`grant create on schema public to ${sql.id(h.roleName('publisher'))}`.execute(adminDbOf(h.db))
  const pool = new pg.Pool({ connectionString: h.roleUrl('publisher'), max: 2 })
  pool.on('error', () => {}) // a connection the test database's teardown ends
  appDb = new Kysely<BookingsDatabase>({ dialect: new PostgresDialect({ pool }) })
  await bookingsTableEnsure(appDb)
  return createBookingsApp({ db: appDb, publisher })
}

const post = (app: ReturnType<typeof createBookingsApp>, body: unknown) =>
  app.request('/bookings', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })

describe('examples/bookings', () => {
  it('a booking is saved and booking.created delivered, signed, to the endpoint', async () => {
    const app = await start()
    await h.createEndpoint({ event_types: ['booking.*'] })
    const res = await post(app, { guest: 'Ada', starts_at: '2030-01-01T10:00:00Z' })
    expect(res.status).toBe(201)
    const { booking, event_id } = (await res.json()) as { booking: { id: string }; event_id: string }
    expect(event_id).toBe(`booking-created-${booking.id}`)
    expect((await app.request(`/bookings/${booking.id}`)).status).toBe(200)
    const event = await sql<{ type: string; subject: string }>`select type, subject from hookledger.events where id = ${event_id}`.execute(h.db)
    expect(event.rows).toEqual([{ type: 'booking.created', subject: `booking://${booking.id}` }])
    await h.step()
    expect(h.receiver.requests).toHaveLength(1)
    expect(h.receiver.requests[0]!.headers['webhook-id']).toBe(event_id)
    expect(JSON.parse(h.receiver.requests[0]!.body)).toMatchObject({ type: 'booking.created', data: { booking_id: String(booking.id) } })
    expect((await h.replay()).differences).toEqual([])
  })

  it('an event the publisher refuses rolls the booking back with it', async () => {
    // A catalog without booking.created: the publish fails after the insert, inside the transaction.
    const catalog = createEventCatalog()
    const app = await start(createPublisher({ catalog: { ...catalog, isKnown: (type) => type !== 'booking.created' && catalog.isKnown(type) } }))
    const res = await post(app, { guest: 'Grace', starts_at: '2030-01-02T10:00:00Z' })
    expect(res.status).toBe(500)
    expect(await res.json()).toEqual({ error: 'the event was refused: unknown_event_type' })
    const left = await sql<{ bookings: string; events: string }>`
      select (select count(*) from public.bookings)::text as bookings, (select count(*) from hookledger.events)::text as events
    `.execute(adminDbOf(h.db))
    expect(left.rows).toEqual([{ bookings: '0', events: '0' }])
  })
})
