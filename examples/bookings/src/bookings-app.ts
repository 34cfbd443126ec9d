import { Hono } from 'hono'
import type { Kysely } from 'kysely'
import { PublishError, type Publisher } from '@hookledger/publisher'
import type { BookingsDatabase } from './bookings-db.js'

/**
 * `POST /bookings` saves the booking and publishes `booking.created` in ONE transaction: the
 * event exists exactly when the booking does (no event for a booking that was rolled back, no
 * booking without its event). `GET /bookings/:id` reads one back.
 */
export function createBookingsApp(deps: { db: Kysely<BookingsDatabase>; publisher: Publisher; owner_id?: string }): Hono {
  const owner_id = deps.owner_id ?? 'default'
  const app = new Hono()

  app.post('/bookings', async (c) => {
    const input = await c.req.json().catch(() => null)
    const guest = typeof input?.guest === 'string' ? input.guest.trim() : ''
    const startsAt = typeof input?.starts_at === 'string' ? new Date(input.starts_at) : new Date(Number.NaN)
    if (!guest || guest.length > 200 || Number.isNaN(startsAt.getTime())) {
      return c.json({ error: 'send { "guest": "…", "starts_at": "<ISO 8601>" }' }, 400)
    }
    try {
      const result = await deps.db.transaction().execute(async (trx) => {
        const booking = await trx
          .insertInto('bookings')
          .values({ guest, starts_at: startsAt })
          .returningAll()
          .executeTakeFirstOrThrow()
        // Thin: an identifier, not the guest's name; the receiver asks this app for the rest.
        const event_id = await deps.publisher.publish(trx, {
          owner_id,
          id: `booking-created-${booking.id}`,
          type: 'booking.created',
          subject: `booking://${booking.id}`,
          data: { booking_id: String(booking.id) },
        })
        return { booking, event_id }
      })
      return c.json(result, 201)
    } catch (err) {
      // The transaction was rolled back: neither the booking nor the event exists.
      if (err instanceof PublishError) return c.json({ error: `the event was refused: ${err.code}` }, 500)
      throw err
    }
  })

  app.get('/bookings/:id', async (c) => {
    const id = Number(c.req.param('id'))
    if (!Number.isSafeInteger(id)) return c.json({ error: 'not found' }, 404)
    const booking = await deps.db.selectFrom('bookings').selectAll().where('id', '=', id).executeTakeFirst()
    return booking ? c.json(booking) : c.json({ error: 'not found' }, 404)
  })

  return app
}
