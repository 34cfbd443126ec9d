import { sql, type RawBuilder } from 'kysely'
import type { Trx } from '@hookledger/store'

/**
 * Inserts delivery rows behind the ledger's back, inside `bypassLedgerGuards` (triggers off):
 * `rows` selects them as the `deliveries` view's first 16 columns, in order (id … updated_at).
 * The view joins two tables (delivery_origins, delivery_states) and its INSTEAD OF trigger does
 * not fire with triggers off, so the forgery writes both, as someone holding the owner's or a
 * superuser's credential would.
 */
export async function forgeDeliveries(trx: Trx, rows: RawBuilder<unknown>): Promise<void> {
  await sql`
    with r (id, owner_id, endpoint_id, event_id, event_type, state, run, run_started_at, attempts, next_attempt_at,
            claimed_by, lease_until, last_status, last_error, created_at, updated_at) as materialized (${rows}),
    o as (
      insert into delivery_origins (id, owner_id, endpoint_id, event_id, event_type, created_at)
      select id::uuid, owner_id::text, endpoint_id::uuid, event_id::text, event_type::text, created_at::timestamptz from r
    )
    insert into delivery_states (id, endpoint_id, state, run, run_started_at, attempts, next_attempt_at, claimed_by,
      lease_until, last_status, last_error, updated_at)
    -- Cast, so an untyped null in \`rows\` (text, in a CTE) lands in its column.
    select id::uuid, endpoint_id::uuid, state::text, run::int, run_started_at::timestamptz, attempts::int,
      next_attempt_at::timestamptz, claimed_by::text, lease_until::timestamptz, last_status::int, last_error::text,
      updated_at::timestamptz from r
  `.execute(trx)
}
