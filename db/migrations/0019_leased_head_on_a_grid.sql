-- 0019 a leased endpoint's queue head sits on a 2-second grid.
--
-- A leased endpoint's head was its lease's end, exactly. Every claim and every settle of a
-- pipelined lease moves that end (now + the lease), so every delivery rewrote its endpoint's
-- `endpoint_queue` row, and since `ready_at` is in both of the table's indexes no rewrite could
-- be HOT: a heap tuple and three index entries a delivery (the drain's `writes` in
-- `npm run bench`), on a table of one row per endpoint that the hot-tables vacuum kept in check.
--
-- The head of a leased endpoint is now its lease's end rounded up to the next 2 seconds. An
-- endpoint sending a backlog keeps the same head for 2 s of settles, and the write leaves a
-- head that did not change alone (hookledger_write writes only a head that differs), so it is
-- rewritten once in 2 s instead of once a delivery. The lease itself is unchanged and the claim
-- decides from it, not from the head. What the grid costs: an endpoint whose lease ran out
-- without being released (its worker died or hung, and the rescuer has not yet taken its
-- delivery back) is read again up to 2 s after the lease's end instead of at it — as long as a
-- claim that finds an endpoint busy makes its delivery wait (the busy snooze). A released
-- lease (the settle that finds nothing following) puts the head back at the endpoint's
-- earliest due delivery, to the microsecond, as before.
--
-- Only the view changes: hookledger_write reads it by name, and replay checks the queue against it.

create or replace view endpoint_queue_expected as
select e.id as endpoint_id, e.owner_id,
  case
    when h.due is null then null
    when e.enabled and e.deleted_at is null then greatest(h.due,
      -- The lease's end, rounded up to the grid: date_bin rounds down, so bin a microsecond
      -- short of one step later (an end already on the grid stays where it is).
      date_bin(interval '2 seconds', e.busy_until + interval '2 seconds' - interval '1 microsecond', timestamptz '2000-01-01 00:00:00+00'),
      e.rate_tat - ((e.rate_limit ->> 'burst')::double precision - 1)
        * ceil(1000 / coalesce(e.rate_adapted_per_second, (e.rate_limit ->> 'per_second')::double precision))
        * interval '1 millisecond')
    else h.due
  end as ready_at
from endpoints e
cross join lateral (
  select min(d.next_attempt_at) as due from delivery_states d
  where d.endpoint_id = e.id and d.state in ('pending', 'retryable')
) w
left join lateral (
  -- The line: the waiting deliveries (claim index) and the one leased (at most one runs).
  select d.state, d.next_attempt_at from (
    select s.id from delivery_states s where s.endpoint_id = e.id and s.state in ('pending', 'retryable')
    union all
    select s.id from delivery_states s where s.id = e.busy_delivery_id and s.endpoint_id = e.id and s.state = 'running'
  ) live
  join delivery_states d on d.id = live.id
  join delivery_origins o on o.id = d.id
  left join events ev on ev.owner_id = o.owner_id and ev.id = o.event_id
  where e.ordering = 'strict'
  order by ev.occurred_at nulls first, o.event_id, d.id
  limit 1
) s0 on true
cross join lateral (
  select case when e.ordering = 'strict' and s0.state is not null and s0.state <> 'running' then s0.next_attempt_at else w.due end as due
) h;
