/**
 * Kysely's `Database`: every table and view of the migrated schema, generated from it by
 * kysely-codegen (`schema.generated.ts`; `npm run check` fails when it lags the migrations),
 * with the tables the engine reads row by row narrowed by hand below — the projections' rows as
 * core defines them, the ledger's and the events' JSON as objects. Each narrowed table must name
 * exactly the generated table's columns (checked at compile time at the end of this file), so
 * a migration that adds or drops one cannot pass unnoticed. Column types are what `pg` returns:
 * timestamptz → Date, bigint → string, bytea → Buffer, jsonb → parsed JSON.
 */
import type { ColumnType, Generated, Kysely, Transaction } from 'kysely'
import type { AttemptRow, DeliveryRow, EndpointRow } from '@hookledger/core'
import type { DB } from './schema.generated.js'

export interface LedgerTable {
  position: Generated<string>
  tx_id: Generated<string>
  occurred_at: Date
  owner_id: string
  kind: string
  endpoint_id: string | null
  delivery_id: string | null
  event_id: string | null
  payload: ColumnType<Record<string, unknown>, string, string>
  actor: string
}

export interface EventsTable {
  owner_id: string
  id: string
  type: string
  subject: string
  occurred_at: Date
  published_at: Date
  data: ColumnType<Record<string, unknown>, string, string>
  fanned_out_at: Date | null
}

/** The projections' rows are defined once, in core, beside their evolve functions. */
export type EndpointsTable = EndpointRow

export type DeliveriesTable = DeliveryRow

export type DeliveryAttemptsTable = AttemptRow

export interface ApiTokensTable {
  id: string
  owner_id: string
  scopes: string[]
  token_hash: Uint8Array
  label: string
  created_at: Date
  revoked_at: Date | null
}

/** The claim's queue head per endpoint ( refreshed by the write primitive). */
export interface EndpointQueueTable {
  endpoint_id: string
  owner_id: string
  ready_at: Date | null
}

/** The tables narrowed by hand; every other one is as generated. */
interface NarrowedTables {
  ledger: LedgerTable
  events: EventsTable
  endpoints: EndpointsTable
  deliveries: DeliveriesTable
  delivery_attempts: DeliveryAttemptsTable
  endpoint_queue: EndpointQueueTable
  api_tokens: ApiTokensTable
}

export interface Database extends Omit<DB, keyof NarrowedTables>, NarrowedTables {}

/** True when A and B name the same columns. */
type SameColumns<A, B> = [Exclude<keyof A, keyof B>, Exclude<keyof B, keyof A>] extends [never, never] ? true : { missing: Exclude<keyof B, keyof A>; extra: Exclude<keyof A, keyof B> }
type NarrowedAgree = { [T in keyof NarrowedTables]: SameColumns<NarrowedTables[T], DB[T]> }
// A narrowed table that lost or gained a column against the schema fails to compile here,
// naming the columns.
const narrowedAgree: { [T in keyof NarrowedTables]: true } = {} as NarrowedAgree
void narrowedAgree

/** The database handle. */
export type Db = Kysely<Database>
/** A transaction; functions that must run inside one take this type. */
export type Trx = Transaction<Database>
