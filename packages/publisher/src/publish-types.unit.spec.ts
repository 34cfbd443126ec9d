// Compiled by `tsc -b` (npm run check) as well as run: the type assertions below fail the build,
// not only the test, if an application's own Kysely types stop being accepted without a cast.
import { Kysely, PostgresDialect, type Generated, type Transaction } from 'kysely'
import type pg from 'pg'
import { describe, expectTypeOf, it } from 'vitest'
import { createPublisher, publish, publishMany, type PublishTransaction } from './index.js'

/** An application's own database, which knows nothing of hookledger's tables. */
interface AppDatabase {
  bookings: { id: Generated<number>; guest: string; starts_at: Date }
}

async function createBooking(trx: Transaction<AppDatabase>, guest: string): Promise<string> {
  const { id } = await trx.insertInto('bookings').values({ guest, starts_at: new Date() }).returning('id').executeTakeFirstOrThrow()
  return publish(trx, { owner_id: 'default', type: 'booking.created', subject: `booking://${id}`, data: { booking_id: String(id) } })
}

async function fromPgClient(client: pg.PoolClient): Promise<string[]> {
  return publishMany(client, [{ owner_id: 'default', type: 'booking.created', subject: 'booking://1' }])
}

describe('publish accepts the application’s own transaction types', () => {
  it('a Transaction<AppDatabase>, a Kysely<AppDatabase>, a pg Client or PoolClient, without casts', () => {
    expectTypeOf<Transaction<AppDatabase>>().toExtend<PublishTransaction>()
    expectTypeOf<Kysely<AppDatabase>>().toExtend<PublishTransaction>()
    expectTypeOf<pg.Client>().toExtend<PublishTransaction>()
    expectTypeOf<pg.PoolClient>().toExtend<PublishTransaction>()
    expectTypeOf(createBooking).returns.resolves.toBeString()
    expectTypeOf(fromPgClient).returns.resolves.toEqualTypeOf<string[]>()
    expectTypeOf(createPublisher().publish).parameter(0).toEqualTypeOf<PublishTransaction>()
    // Never run: only proves a Kysely built on the app's own types is a Kysely hookledger takes.
    void (() => new Kysely<AppDatabase>({ dialect: new PostgresDialect({ pool: {} as never }) }))
  })
  it('an event is type-checked: a missing subject does not compile', () => {
    // @ts-expect-error subject is required
    void (() => publish({} as Transaction<AppDatabase>, { owner_id: 'default', type: 'booking.created' }))
  })
})
