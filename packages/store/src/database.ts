/**
 * Kysely table types, one interface per table, assembled into `Database`. Column types are what
 * `pg` returns: timestamptz → Date, bigint → string, bytea → Buffer, jsonb → parsed JSON.
 */
import type { ColumnType, Generated, Kysely, Transaction } from 'kysely'

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

export interface EndpointsTable {
  id: string
  owner_id: string
  url: string
  description: string
  event_types: string[]
  embed_id: string | null
  secret_sealed: Uint8Array
  secret_key_id: string
  prev_secret_sealed: Uint8Array | null
  prev_secret_key_id: string | null
  prev_secret_expires_at: Date | null
  enabled: boolean
  disabled_reason: string | null
  failing_since: Date | null
  busy_until: Date | null
  busy_delivery_id: string | null
  deleted_at: Date | null
  created_at: Date
  updated_at: Date
}

export interface DeliveriesTable {
  id: string
  owner_id: string
  endpoint_id: string
  event_id: string
  event_type: string
  state: 'pending' | 'running' | 'retryable' | 'completed' | 'discarded'
  run: number
  run_started_at: Date
  attempts: number
  next_attempt_at: Date | null
  claimed_by: string | null
  lease_until: Date | null
  last_status: number | null
  last_error: string | null
  created_at: Date
  updated_at: Date
}

export interface DeliveryAttemptsTable {
  ledger_position: string
  delivery_id: string
  attempt: number
  counted: boolean
  run: number
  owner_id: string
  started_at: Date
  duration_ms: number
  status_code: number | null
  error: string | null
  outcome: string
  signed_with: string[]
  actor: string
}

export interface ApiTokensTable {
  id: string
  owner_id: string
  scopes: string[]
  token_hash: Uint8Array
  label: string
  created_at: Date
  revoked_at: Date | null
}

export interface Database {
  ledger: LedgerTable
  events: EventsTable
  endpoints: EndpointsTable
  deliveries: DeliveriesTable
  delivery_attempts: DeliveryAttemptsTable
  api_tokens: ApiTokensTable
}

/** The database handle. */
export type Db = Kysely<Database>
/** A transaction; functions that must run inside one take this type. */
export type Trx = Transaction<Database>
