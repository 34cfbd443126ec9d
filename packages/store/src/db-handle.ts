import { CompiledQuery, Kysely, PostgresDialect } from 'kysely'
import type { Database, Db } from './database.js'

/**
 * The subset of `pg.Pool` the store needs (as Kysely's own `PostgresPool`), so callers hand in
 * the pool they created and own.
 */
export type { PostgresPool } from 'kysely'

/** The PostgreSQL schema every hookledger object lives in unless `HOOKLEDGER_DB_SCHEMA` says otherwise. */
export const DEFAULT_DB_SCHEMA = 'hookledger'

/** A schema name hookledger accepts: a plain lower-case identifier, never quoted-only spellings. */
export const DB_SCHEMA_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/

/** @throws Error when `schema` is not a plain lower-case identifier. */
export function assertDbSchemaName(schema: string): string {
  if (!DB_SCHEMA_PATTERN.test(schema) || schema.startsWith('pg_')) {
    throw new Error(`database schema "${schema}" must match ${DB_SCHEMA_PATTERN} and not start with pg_`)
  }
  return schema
}

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
 */
export function createDb(pool: import('kysely').PostgresPool, options: { schema?: string } = {}): Db {
  const schema = assertDbSchemaName(options.schema ?? DEFAULT_DB_SCHEMA)
  const db = new Kysely<Database>({
    dialect: new PostgresDialect({
      pool,
      onCreateConnection: async (connection) => {
        await connection.executeQuery(CompiledQuery.raw(`set search_path to "${schema}"`))
      },
    }),
  })
  schemaOfDb.set(db, schema)
  return db
}
