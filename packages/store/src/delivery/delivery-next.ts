/**
 * Which deliveries of an endpoint go next, in its order (the claim, the settle that passes a
 * lease on, and the one-call settle's look-ahead all read it here):
 *
 * - `ordering: none`: its due deliveries (pending or retryable, next_attempt_at ≤ now) by due
 *   time, then id — one index probe.
 * - `ordering: strict` (core strict-order.ts): its live deliveries (pending, retryable or
 *   running) by the event's occurred_at (a pruned event first), then event id, then id. The
 *   first is the head; only a due, waiting head may be claimed, and the one after it only
 *   behind it — so a failing or running head holds back the rest. The caller's lock keeps the
 *   due prefix (`lockHeads` skips rows not waiting and due). Its cost follows the endpoint's
 *   live backlog (a sort), paid only by strict endpoints. An event of its owner not fanned out
 *   yet comes into the line where its occurred_at puts it: the deliveries after it wait.
 *
 * Rows: `id` and `k`, the position on the endpoint's line (1: what goes next).
 */
import { sql, type RawBuilder } from 'kysely'

/** The strict line's order (delivery `d`, its origin `o`, its event `ev`). */
export const STRICT_ORDER = sql.raw('ev.occurred_at nulls first, o.event_id, d.id')

/**
 * The live deliveries of endpoint row `ep` as `d` (with `o` and `ev` joined): its waiting ones
 * and the one it has leased (at most one runs per endpoint), through the live index (migration 0021).
 */
export const STRICT_LINE_FROM = sql.raw(`delivery_states d
  join delivery_origins o on o.id = d.id and d.endpoint_id = ep.id and d.next_attempt_at is not null
  left join events ev on ev.owner_id = o.owner_id and ev.id = o.event_id`)

/**
 * The first `n` of endpoint `endpointId`'s line at `now`, leaving out `except` (a uuid[]
 * expression: deliveries settled or already started in the same statement). With `strict:
 * false` (the caller read every endpoint it asks about as `ordering: none`) the strict line is
 * left out of the statement: planning its joins was most of the one-call settle's planning
 * time. An endpoint made strict since is then simply not read (its `ep.ordering` no longer
 * matches), and the producer's claim takes it up.
 */
export function nextOfEndpoint(
  endpointId: RawBuilder<unknown>,
  now: Date,
  n: number,
  except: RawBuilder<unknown> = sql`'{}'::uuid[]`,
  options: { strict?: boolean } = {},
): RawBuilder<unknown> {
  // The live index in due order, read for `n` + 3 rows and filtered after: ahead of the
  // endpoint's next waiting deliveries there can be only its running one (which a settle in the
  // same statement is settling) and the one its worker started (in `except`), with a row to
  // spare. With the state test inside, the planner reckons a waiting row rare (most rows are
  // settled) and reads every due row of the endpoint to sort them (a bitmap scan: 0.6 ms an
  // endpoint at the drain's backlog against a few index tuples). Fewer rows than asked for
  // only means the claim path takes the next one up.
  const none = sql`
      select d.id, row_number() over (order by d.next_attempt_at, d.id) as k from (
        select d.id, d.next_attempt_at from (
          select d.id, d.next_attempt_at, d.state from delivery_states d
          where ep.ordering = 'none' and d.endpoint_id = ep.id and d.next_attempt_at is not null and d.next_attempt_at <= ${now}
          order by d.next_attempt_at, d.id limit ${n + 3}
        ) d
        where d.state in ('pending', 'retryable') and not (d.id = any(${except}))
        order by d.next_attempt_at, d.id limit ${n}
      ) d`
  // An event of the owner not fanned out yet (in this snapshot: another fan-out may be writing
  // its deliveries) that comes before a delivery on the line holds that delivery back, as a
  // head would (migration 0017): the line's deliveries after it are not read.
  const strict = sql`
      select l.id, l.k from (
        select d.id, row_number() over (order by ${STRICT_ORDER}) as k
        from ${STRICT_LINE_FROM}
        left join lateral (
          select u.occurred_at, u.id from events u
          where u.owner_id = ep.owner_id and u.fanned_out_at is null
          order by u.occurred_at, u.id limit 1
        ) unfanned on true
        where ep.ordering = 'strict' and not (d.id = any(${except}))
          and (unfanned.id is null or ev.occurred_at is null or (ev.occurred_at, o.event_id) < (unfanned.occurred_at, unfanned.id))
        order by ${STRICT_ORDER} limit ${n}
      ) l`
  const lines = options.strict === false ? none : sql`${none} union all ${strict}`
  return sql`
    select x.id, x.k from endpoints ep cross join lateral (${lines}) x
    where ep.id = ${endpointId}
  `
}
