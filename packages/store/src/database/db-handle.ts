import { CompiledQuery, Kysely, PostgresDialect } from 'kysely'
import { assertDbSchemaName, DEFAULT_DB_SCHEMA } from '@hookledger/core'
import type { Database, Db } from './database.js'
import { preparingPool } from './prepared-statements.js'

/**
 * The subset of `pg.Pool` the store needs (as Kysely's own `PostgresPool`), so callers hand in
 * the pool they created and own.
 */
export type { PostgresPool } from 'kysely'

export { DEFAULT_DB_SCHEMA, DB_SCHEMA_PATTERN, assertDbSchemaName } from '@hookledger/core'

// The schema a handle was opened on, for the migrator (it creates the schema and its own tables
// there) and for the few queries that name it (catalog lookups).
const schemaOfDb = new WeakMap<object, string>()

/** The schema `db` (or a transaction of it) was opened on. */
export function dbSchemaOf(db: Kysely<any>): string {
  return schemaOfDb.get(db) ?? DEFAULT_DB_SCHEMA
}

/**
 * Wraps a pool the composition root created. Destroying the Kysely ends the pool.
 *
 * Every connection's `search_path` is set to `schema` alone when Kysely first sees it, so the
 * store's unqualified SQL names hookledger's tables and never an application's `public.events`
 * sharing the database (a connection handed out by the pool keeps its session settings).
 * With `prepare`, statements a connection repeats are prepared on it (prepared-statements.ts;
 * off by default: see there).
 */
export function createDb(pool: import('kysely').PostgresPool, options: { schema?: string; prepare?: boolean } = {}): Db {
  const schema = assertDbSchemaName(options.schema ?? DEFAULT_DB_SCHEMA)
  const db = new Kysely<Database>({
    dialect: new PostgresDialect({
      pool: options.prepare === true ? preparingPool(pool) : pool,
      onCreateConnection: async (connection) => {
        await connection.executeQuery(CompiledQuery.raw(`set search_path to "${schema}"`))
      },
    }),
  })
  schemaOfDb.set(db, schema)
  return db
}
