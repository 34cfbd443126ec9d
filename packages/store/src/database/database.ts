/**
 * Kysely table types, one interface per table, assembled into `Database`. Column types are what
 * `pg` returns: timestamptz → Date, bigint → string, bytea → Buffer, jsonb → parsed JSON.
 */
import type { ColumnType, Generated, Kysely, Transaction } from 'kysely'
import type { AttemptRow, DeliveryRow, EndpointRow } from '@hookledger/core'

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

export interface Database {
  ledger: LedgerTable
  events: EventsTable
  endpoints: EndpointsTable
  deliveries: DeliveriesTable
  delivery_attempts: DeliveryAttemptsTable
  endpoint_queue: EndpointQueueTable
  api_tokens: ApiTokensTable
}

/** The database handle. */
export type Db = Kysely<Database>
/** A transaction; functions that must run inside one take this type. */
export type Trx = Transaction<Database>
