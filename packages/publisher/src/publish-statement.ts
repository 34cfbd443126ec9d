import { eventsChannel } from '@hookledger/core'
import type { PreparedEvent } from './event-prepare.js'

/**
 * The one statement that publishes a batch, in `schema`: the `events` rows and, for each event
 * actually inserted, its `event.published` ledger entry — what the service's own `eventInsert`
 * writes (store/src/event-publish.ts) — and the NOTIFY that wakes the fan-out, delivered by
 * PostgreSQL only on commit.
 *
 * `$1` the events as a JSON array, `$2` now (null: the statement's timestamp, the database's
 * clock, which the service reads too), `$3` the ledger actor.
 *
 * Per input (by `n`, its position) it answers whether it was inserted, and for an id already
 * stored, whether the stored content is the same (`same`: null when the existing row is not
 * visible to this statement — committed by a concurrent publisher after it began; the caller
 * asks again).
 */
export function publishStatement(schema: string): string {
  const q = (table: string) => `"${schema}".${table}`
  return `
    with input as (
      select x.n, r.*
      from jsonb_array_elements($1::jsonb) with ordinality as x(entry, n)
      cross join lateral jsonb_to_record(x.entry)
        as r(owner_id text, id text, type text, subject text, occurred_at timestamptz, data jsonb)
    ),
    clock as (select coalesce($2::timestamptz, statement_timestamp()) as now),
    inserted as (
      insert into ${q('events')} (owner_id, id, type, subject, occurred_at, published_at, data)
      select i.owner_id, i.id, i.type, i.subject, coalesce(i.occurred_at, clock.now), clock.now, i.data
      from input i cross join clock
      order by i.n
      on conflict (owner_id, id) do nothing
      returning owner_id, id
    ),
    appended as (
      insert into ${q('ledger')} (occurred_at, owner_id, kind, endpoint_id, delivery_id, event_id, payload, actor)
      select clock.now, i.owner_id, 'event.published', null, null, i.id,
             jsonb_build_object('type', i.type, 'subject', i.subject), $3::text
      from input i
      join inserted e on e.owner_id = i.owner_id and e.id = i.id
      cross join clock
      order by i.n
      returning 1
    )
    select
      coalesce((
        select jsonb_agg(jsonb_build_array(i.n, e.id is not null, ${sameContent('i', 'ex')}) order by i.n)
        from input i
        left join inserted e on e.owner_id = i.owner_id and e.id = i.id
        left join ${q('events')} ex on ex.owner_id = i.owner_id and ex.id = i.id
      ), '[]'::jsonb) as outcomes,
      (select count(*) from appended) as appended,
      (select pg_notify('${eventsChannel(schema)}', '') where exists (select 1 from inserted)) as notified
  `
}

/**
 * For ids another transaction stored after `publishStatement` began: the same comparison, in a
 * statement of its own (under READ COMMITTED it sees that transaction's rows).
 */
export function sameContentStatement(schema: string): string {
  return `
    select x.n, ${sameContent('r', 'ex')} as same
    from jsonb_array_elements($1::jsonb) with ordinality as x(entry, n)
    cross join lateral jsonb_to_record(x.entry)
      as r(owner_id text, id text, type text, subject text, occurred_at timestamptz, data jsonb)
    left join "${schema}".events ex on ex.owner_id = r.owner_id and ex.id = r.id
    order by x.n
  `
}

// Same content: type, subject and data (jsonb equality: key order and spacing do not matter),
// and occurred_at when the publisher gave one. Null when no stored row is visible.
const sameContent = (input: string, stored: string) => `
  case when ${stored}.id is null then null else
    ${stored}.type = ${input}.type and ${stored}.subject = ${input}.subject and ${stored}.data = ${input}.data
    and (${input}.occurred_at is null or ${stored}.occurred_at = ${input}.occurred_at)
  end`

/** The statements' `$1`: the prepared events as JSON, in order. */
export const eventsJson = (events: readonly PreparedEvent[]): string => JSON.stringify(events)
