/**
 * A connection's repeated statements go by name (prepared-statements.ts), on a real PostgreSQL:
 * prepared once they repeat, and sent unnamed again on a connection where the prepared one can
 * no longer run because its table changed shape.
 */
import { sql } from 'kysely'
import pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { testDatabase, type TestDatabase } from '@hookledger/testkit'
import type { Db } from './database.js'
import { createDb } from './db-handle.js'
import { PREPARE_AFTER, statementName } from './prepared-statements.js'

let database: TestDatabase
// One connection, preparing (off by default).
let t: { db: Db }
beforeAll(async () => {
  database = await testDatabase({ poolSize: 1 })
  t = { db: createDb(new pg.Pool({ connectionString: database.url, max: 1 }), { prepare: true }) }
  await sql`create table scratch (id int primary key)`.execute(t.db)
  await sql`insert into scratch values (1), (2)`.execute(t.db)
})
afterAll(async () => {
  await t.db.destroy()
  await database.close()
})

const read = (id: number) => sql<{ id: number }>`select * from scratch where id = ${id}`.execute(t.db)
const prepared = async () =>
  (await sql<{ name: string }>`select name from pg_prepared_statements`.execute(t.db)).rows.map((r) => r.name)

it('prepared on the connection from its PREPARE_AFTER-th run; a change of shape sends it unnamed again, at once outside a transaction', async () => {
  const text = 'select * from scratch where id = $1'
  for (let i = 1; i < PREPARE_AFTER; i++) await read(1)
  expect(await prepared()).not.toContain(statementName(text))
  await read(1)
  expect(await prepared()).toContain(statementName(text))
  expect((await read(2)).rows).toEqual([{ id: 2 }])

  await sql`alter table scratch add column note text`.execute(t.db)
  // Outside a transaction the failed run is repeated unnamed: the caller sees the new shape.
  expect((await read(1)).rows).toEqual([{ id: 1, note: null }])
  expect((await read(2)).rows).toEqual([{ id: 2, note: null }])
})

it('inside a transaction the change of shape fails that transaction once, then the statement goes unnamed', async () => {
  const readIn = (db: typeof t.db, id: number) => sql<{ id: number }>`select * from scratch where id = ${id} and true`.execute(db)
  for (let i = 0; i < PREPARE_AFTER + 1; i++) await readIn(t.db, 1)
  await sql`alter table scratch add column more text`.execute(t.db)
  await expect(t.db.transaction().execute((trx) => readIn(trx, 1))).rejects.toMatchObject({ code: '0A000' })
  expect((await t.db.transaction().execute((trx) => readIn(trx, 1))).rows).toEqual([{ id: 1, note: null, more: null }])
})
