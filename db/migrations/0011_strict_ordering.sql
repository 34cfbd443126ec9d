-- 0011 strict ordering per endpoint (issue 22 item 5): `ordering: strict` (column from 0007).
--
-- A strict endpoint's deliveries form one line, by the event's occurred_at (a pruned event
-- first), then event id, then delivery id (core delivery/strict-order.ts; the claim's SQL in
-- store delivery/delivery-next.ts). Only the line's head may go, once it is due: the queue head
-- of a strict endpoint is its line head's due time, not its earliest due delivery's, so the
-- claim does not even read an endpoint whose head waits out a backoff. While the head is
-- running (leased), the endpoint is ready as any other: when its lease ends, with its earliest
-- waiting time (the claim then finds the line held by the running head, and the rescuer or
-- the settle moves it).
--
-- Only the view changes: hookledger_write reads it by name, and replay checks the queue against it.

create or replace view endpoint_queue_expected as
select e.id as endpoint_id, e.owner_id,
  case
    when h.due is null then null
    when e.enabled and e.deleted_at is null then greatest(h.due, e.busy_until,
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
