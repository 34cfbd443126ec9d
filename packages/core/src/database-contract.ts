/**
 * The parts of hookledger's database that code outside the service relies on
 * (`@hookledger/publisher` writes events into it): where the objects live and which channel
 * wakes the fan-out. The tables themselves are defined by db/migrations/.
 */

/** The PostgreSQL schema every hookledger object lives in unless `HOOKLEDGER_DB_SCHEMA` says otherwise. */
export const DEFAULT_DB_SCHEMA = 'hookledger'

/** A schema name hookledger accepts: a plain lower-case identifier. */
export const DB_SCHEMA_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/

/** @throws Error when `schema` is not a plain lower-case identifier (or is a system `pg_` one). */
export function assertDbSchemaName(schema: string): string {
  if (!DB_SCHEMA_PATTERN.test(schema) || schema.startsWith('pg_')) {
    throw new Error(`database schema "${schema}" must match ${DB_SCHEMA_PATTERN} and not start with pg_`)
  }
  return schema
}

/**
 * NOTIFY channel that wakes the fan-out loop; the payload is empty (a hint, not data). It is
 * database-wide, not per schema: two hookledger schemas in one database wake each other's
 * workers needlessly, never wrongly.
 */
export const EVENTS_CHANNEL = 'hookledger_events'
