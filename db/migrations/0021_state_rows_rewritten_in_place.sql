-- 0021 a delivery's claim rewrites its state row in place (a HOT update): two indexes, not four.
--
-- Every claim and every settle changed `state`, which each of delivery_states' three partial
-- indexes named in its predicate, and `updated_at` and `lease_until`, which two of them had as
-- their key. So no update could be HOT: each wrote a new heap tuple off its page's chain and a
-- new entry in the primary key and in whichever partial index the new version fell into — the
-- drain's `writes` in `npm run bench` showed a HOT share of 0 and about six index entries a
-- delivery. Now:
--
-- * The claim index is the live index: its predicate is `next_attempt_at is not null`, which
--   holds exactly while a delivery can still move (pending, retryable or running: a claim keeps
--   the due time it was claimed at, and every settle that ends a delivery clears it — the
--   constraint below says so). A claim changes none of the indexed columns, so its update is
--   HOT; a settle that ends the delivery leaves the live index, which takes a new primary-key
--   entry and nothing else. Readers of the waiting set add `state in ('pending', 'retryable')`
--   as a filter: at most the one running delivery of an endpoint is read past.
-- * The rescuer's index (`lease_until where running`) goes. A running delivery holds its
--   endpoint's lease (`busy_delivery_id`), and an endpoint whose lease lapsed comes up in
--   `endpoint_queue` at its lease's end (the view below counts a running delivery as live work),
--   so the rescuer finds lost deliveries through the queue heads. A claim that takes over a
--   lapsed lease records the delivery that held it as interrupted in the same transaction
--   (delivery-claim.ts), so a running delivery is never left unnamed.
-- * Retention's index (`updated_at where settled`) goes: retention reads each owner's oldest
--   deliveries through the origins' owner log (created_at, which a delivery's last change
--   never precedes) and keeps those settled before the cutoff (projection-retention.ts).

alter table delivery_states add constraint delivery_states_live_has_next_attempt
  check ((state in ('pending', 'retryable', 'running')) = (next_attempt_at is not null));

create index delivery_states_live_idx on delivery_states (endpoint_id, next_attempt_at, id)
  where next_attempt_at is not null;
drop index delivery_states_claim_idx;
drop index delivery_states_running_idx;
drop index delivery_states_settled_idx;

-- 0019's view, with an endpoint's due time taken over its live deliveries (the live index's
-- predicate), the running one included: an endpoint holding a lease comes up at the lease's end
-- even with nothing else waiting, which is where the rescuer looks for lost deliveries.
create or replace view endpoint_queue_expected as
select e.id as endpoint_id, e.owner_id,
  case
    when h.due is null then null
    when e.enabled and e.deleted_at is null then greatest(h.due,
      date_bin(interval '2 seconds', e.busy_until + interval '2 seconds' - interval '1 microsecond', timestamptz '2000-01-01 00:00:00+00'),
      e.rate_tat - ((e.rate_limit ->> 'burst')::double precision - 1)
        * ceil(1000 / coalesce(e.rate_adapted_per_second, (e.rate_limit ->> 'per_second')::double precision))
        * interval '1 millisecond')
    else h.due
  end as ready_at
from endpoints e
cross join lateral (
  select min(d.next_attempt_at) as due from delivery_states d
  where d.endpoint_id = e.id and d.next_attempt_at is not null
) w
left join lateral (
  -- The line: the live deliveries (the live index), the leased one among them.
  select d.state, d.next_attempt_at from delivery_states d
  join delivery_origins o on o.id = d.id
  left join events ev on ev.owner_id = o.owner_id and ev.id = o.event_id
  where e.ordering = 'strict' and d.endpoint_id = e.id and d.next_attempt_at is not null
  order by ev.occurred_at nulls first, o.event_id, d.id
  limit 1
) s0 on true
cross join lateral (
  select case when e.ordering = 'strict' and s0.state is not null and s0.state <> 'running' then s0.next_attempt_at else w.due end as due
) h;

-- The heads as the view now has them: an endpoint holding a lease with nothing else waiting
-- gets one at the lease's end. (This migration runs as the tables' owner, whom the one-door
-- guard lets write them.)
insert into endpoint_queue (endpoint_id, owner_id, ready_at)
select x.endpoint_id, x.owner_id, x.ready_at from endpoint_queue_expected x
order by x.endpoint_id
on conflict (endpoint_id) do update set ready_at = excluded.ready_at
where endpoint_queue.ready_at is distinct from excluded.ready_at;
