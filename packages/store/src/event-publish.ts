import { sql, type RawBuilder } from 'kysely'
import { DEFAULT_DB_SCHEMA, DELIVERIES_CHANNEL, EVENTS_CHANNEL } from '@hookledger/core'
import type { Trx } from './database/database.js'

/** The NOTIFY channels (database contract, in core): the default schema's names. */
export { EVENTS_CHANNEL, DELIVERIES_CHANNEL }

/**
 * The channel of this install, computed in SQL from the schema the store's connections run in
 * (their search_path is the install's schema): `eventsChannel(current_schema())` in core.
 */
export function channelSql(kind: 'events' | 'deliveries'): RawBuilder<string> {
  const base = kind === 'events' ? EVENTS_CHANNEL : DELIVERIES_CHANNEL
  return sql<string>`(case when current_schema() = ${DEFAULT_DB_SCHEMA} then ${base} else ${base} || '.' || current_schema() end)`
}

/** A validated thin event to store. */
export interface EventToPublish {
  readonly id: string
  readonly type: string
  readonly subject: string
  readonly occurred_at: Date
  readonly data: Record<string, unknown>
}

/**
 * Stores one of hookledger's own events (an operational event a settle publishes, a test event)
 * in the caller's transaction (the transactional outbox): it is fanned out only if that
 * transaction commits. The same id again stores nothing and returns `created: false`. One call
 * of `hookledger_publish_internal` (the baseline's publish, migration 0009): the row, its
 * `event.published` entry with the SHA-256 of its data, and the NOTIFY, delivered on commit.
 * An owner's publish limit and suspension hold back the owner's publishes (`hookledger_publish`,
 * the publisher package), never these.
 */
export async function eventInsert(
  trx: Trx,
  params: { owner_id: string; event: EventToPublish; now: Date; actor: string },
): Promise<{ id: string; created: boolean }> {
  const { owner_id, event, now, actor } = params
  const input = [{ id: event.id, type: event.type, subject: event.subject, occurred_at: event.occurred_at.toISOString(), data: event.data }]
  const result = await sql<{ outcomes: [number, boolean, boolean | null][] }>`
    select hookledger_publish_internal(${owner_id}, ${JSON.stringify(input)}::jsonb, ${now}::timestamptz, ${actor}) as outcomes
  `.execute(trx)
  return { id: event.id, created: result.rows[0]!.outcomes[0]![1] }
}
