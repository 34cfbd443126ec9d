import type { PreparedEvent } from './event-prepare.js'

/**
 * The one call that publishes a batch of one owner's events, in `schema`: `hookledger_publish`
 * (the baseline migration), a SECURITY DEFINER function and the only thing the publisher's database
 * role may run. It stores the `events` rows and, for each one actually inserted, its
 * `event.published` ledger entry (with the SHA-256 of its data) — what the service's own
 * `eventInsert` calls too — and the NOTIFY that wakes the fan-out, delivered only on commit.
 *
 * `$1` the owner, `$2` the events as a JSON array, `$3` now (null: the statement's timestamp,
 * the database's clock, which the service reads too), `$4` the ledger actor.
 *
 * Per input (by `n`, its position) it answers whether it was inserted, and for an id already
 * stored, whether the stored content is the same (`same`: null when the existing row is not
 * visible to this statement — committed by a concurrent publisher after it began; the caller
 * asks again).
 */
export function publishStatement(schema: string, limit: 'limited' | 'admitted' = 'limited'): string {
  // `admitted`: the service took the owner's limit in a statement of its own (migration 0018).
  const fn = limit === 'admitted' ? 'hookledger_publish_admitted' : 'hookledger_publish'
  return `select "${schema}".${fn}($1::text, $2::jsonb, $3::timestamptz, $4::text) as outcomes`
}

/**
 * For ids another transaction stored after `publishStatement` began: the same comparison, in a
 * call of its own (under READ COMMITTED it sees that transaction's rows). `$1` the owner, `$2`
 * the events.
 */
export function sameContentStatement(schema: string): string {
  return `select "${schema}".hookledger_publish_compare($1::text, $2::jsonb) as outcomes`
}

/** The calls' events: the prepared events as JSON, in order. */
export const eventsJson = (events: readonly PreparedEvent[]): string => JSON.stringify(events)

/**
 * The declared event types among `$1` (text[]): the install's catalog (migration 0005), which
 * the publisher role may read. Laid over the built-ins in core, it is the catalog the service
 * checks `POST /api/events` and fans out against, read in the caller's transaction.
 */
export function catalogStatement(schema: string): string {
  return `select name, description, exposure, group_name as "group", data_schema as schema, deprecated_at, deprecation_reason, sunset_at, declared_at, updated_at
    from "${schema}".event_types where name = any($1::text[])`
}
