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

/** NOTIFY channel that wakes the fan-out loop (the default schema's; see eventsChannel). */
export const EVENTS_CHANNEL = 'hookledger_events'
/** NOTIFY channel that wakes the delivery loop (the default schema's; see deliveriesChannel). */
export const DELIVERIES_CHANNEL = 'hookledger_deliveries'

/**
 * The channels of one install. NOTIFY is database-wide, so an install in another schema of the
 * same database gets channels of its own (`hookledger_events.<schema>`): it is never woken by
 * its neighbour's traffic. The default schema keeps the plain names. Payloads are empty: a
 * channel is a hint to look, never data.
 */
export const eventsChannel = (schema: string): string => channelOf(EVENTS_CHANNEL, schema)
export const deliveriesChannel = (schema: string): string => channelOf(DELIVERIES_CHANNEL, schema)
const channelOf = (base: string, schema: string) => (schema === DEFAULT_DB_SCHEMA ? base : `${base}.${assertDbSchemaName(schema)}`)
