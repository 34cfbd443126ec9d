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

/**
 * A transaction as the application's kysely types describe it when they are not the copy this
 * package sees — another version, or the CommonJS declarations in a CommonJS app: a class of
 * its own with its own `#private`, so never assignable to this package's `Kysely<any>`.
 */
declare class OtherCopyTransaction<DB> {
  #private
  get isTransaction(): true
  executeQuery<R>(query: { readonly sql: string } | { compile(): { readonly sql: string } }): Promise<{ rows: R[] }>
  selectFrom(table: keyof DB & string): unknown
}

async function createBooking(trx: Transaction<AppDatabase>, guest: string): Promise<string> {
  const { id } = await trx.insertInto('bookings').values({ guest, starts_at: new Date() }).returning('id').executeTakeFirstOrThrow()
  return publish(trx, { owner_id: 'default', type: 'booking.created', subject: `booking://${id}`, data: { booking_id: String(id) } })
}

async function fromPgClient(client: pg.PoolClient): Promise<string[]> {
  return publishMany(client, [{ owner_id: 'default', type: 'booking.created', subject: 'booking://1' }])
}

describe('publish accepts the application’s own transaction types', () => {
  it('a Transaction<AppDatabase>, a Kysely<AppDatabase>, another kysely copy’s transaction, a pg Client or PoolClient, without casts', () => {
    expectTypeOf<Transaction<AppDatabase>>().toExtend<PublishTransaction>()
    expectTypeOf<Kysely<AppDatabase>>().toExtend<PublishTransaction>()
    expectTypeOf<OtherCopyTransaction<AppDatabase>>().toExtend<PublishTransaction>()
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
