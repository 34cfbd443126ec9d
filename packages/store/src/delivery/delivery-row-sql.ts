import { sql } from 'kysely'

/**
 * A delivery row (`DeliveryRow`, the `deliveries` view's columns in its order) from its two
 * tables: `o` for delivery_origins (what it is), `s` for delivery_states (where it stands). The
 * hot path locks `s` alone (`for update of s`): locking through the view would lock, and so
 * rewrite the tuple header of, the origin row too, which never changes.
 */
export const DELIVERY_ROW_COLUMNS = sql.raw(
  'o.id, o.owner_id, o.endpoint_id, o.event_id, o.event_type, s.state, s.run, s.run_started_at, s.attempts, ' +
    's.next_attempt_at, s.claimed_by, s.lease_until, s.last_status, s.last_error, o.created_at, s.updated_at, s.snoozes, s.snoozed_ms',
)
