/**
 * A delivery-cycle transaction left idle past its limit is ended by the server, its locks let go
 * (transaction-idle-limit.ts): what a worker cut off mid-transaction leaves behind does not block
 * the rescue of what it held. On a real PostgreSQL, with a limit short enough to watch.
 */
import { sql } from 'kysely'
import pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { eventually, testDatabase, type TestDatabase } from '@hookledger/testkit'
import type { Db } from './database.js'
import { createDb } from './db-handle.js'
import { limitTransactionIdle } from './transaction-idle-limit.js'

let database: TestDatabase
let cutOff: Db
beforeAll(async () => {
  database = await testDatabase()
  // The worker that will be cut off: its own pool, so its ended connection harms no other test.
  // The server's FATAL on that connection is expected: heard, as the service's pool hears it.
  const pool = new pg.Pool({ connectionString: database.url, max: 1 })
  pool.on('error', () => {})
  pool.on('connect', (client) => client.on('error', () => {}))
  cutOff = createDb(pool)
  await sql`create table scratch_locks (id int primary key)`.execute(database.db)
  await sql`insert into scratch_locks values (1)`.execute(database.db)
})
afterAll(async () => {
  await cutOff.destroy().catch(() => {})
  await database.close()
})

it('a transaction idle past its limit is ended by the server and its row locks are free again', async () => {
  let pid = 0
  let locked!: () => void
  const isLocked = new Promise<void>((resolve) => (locked = resolve))
  let resume!: () => void
  const resumed = new Promise<void>((resolve) => (resume = resolve))
  const stuck = cutOff.transaction().execute(async (trx) => {
    await limitTransactionIdle(trx, 300)
    pid = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx)).rows[0]!.pid
    await sql`select id from scratch_locks where id = 1 for update`.execute(trx)
    locked()
    await resumed // the worker, cut off, sends nothing more
    await sql`select 1`.execute(trx)
  })
  stuck.catch(() => {})
  await isLocked
  // The server ends the idle transaction and its session…
  await eventually('the idle transaction ended by the server', async () =>
    (await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity where pid = ${pid}`.execute(database.db)).rows[0]!.n === 0)
  // …so the row it had locked can be locked at once by another.
  const free = await database.db.transaction().execute(async (trx) =>
    (await sql<{ id: number }>`select id from scratch_locks where id = 1 for update nowait`.execute(trx)).rows)
  expect(free).toEqual([{ id: 1 }])
  // And the cut-off worker learns it when it speaks again: its transaction is gone.
  resume()
  await expect(stuck).rejects.toThrow(/idle-in-transaction timeout|terminat|Connection/i)
})
