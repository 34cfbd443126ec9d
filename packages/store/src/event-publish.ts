import { sql, type RawBuilder } from 'kysely'
import { DEFAULT_DB_SCHEMA, DELIVERIES_CHANNEL, EVENTS_CHANNEL } from '@hookledger/core'
import type { Trx } from './database.js'
import { ledgerWrite } from './ledger-write.js'

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
 * Stores an event in the caller's transaction (the transactional outbox): it is fanned out
 * only if that transaction commits. The same id again stores nothing and returns
 * `created: false`. The NOTIFY is delivered on commit.
 */
export async function eventInsert(
  trx: Trx,
  params: { owner_id: string; event: EventToPublish; now: Date; actor: string },
): Promise<{ id: string; created: boolean }> {
  const { owner_id, event, now, actor } = params
  const inserted = await sql<{ id: string }>`
    insert into events (owner_id, id, type, subject, occurred_at, published_at, data)
    values (${owner_id}, ${event.id}, ${event.type}, ${event.subject}, ${event.occurred_at}, ${now}, ${JSON.stringify(event.data)}::jsonb)
    on conflict (owner_id, id) do nothing
    returning id
  `.execute(trx)
  if (inserted.rows.length === 0) return { id: event.id, created: false }
  await ledgerWrite(trx, { entries: [
    {
      kind: 'event.published',
      occurred_at: now,
      owner_id,
      endpoint_id: null,
      delivery_id: null,
      event_id: event.id,
      actor,
      payload: { type: event.type, subject: event.subject },
    },
  ], notify: { channel: 'events' } })
  return { id: event.id, created: true }
}
