import { Kysely, PostgresDialect } from 'kysely'
import type { Database, Db } from './database.js'

/**
 * The subset of `pg.Pool` the store needs (as Kysely's own `PostgresPool`), so callers hand in
 * the pool they created and own.
 */
export type { PostgresPool } from 'kysely'

/** Wraps a pool the composition root created. Destroying the Kysely ends the pool. */
export function createDb(pool: import('kysely').PostgresPool): Db {
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
}
