-- The claim's queue head: per endpoint, when it can next be claimed. Before this, the claim
-- probed every endpoint (deleted ones too) for its earliest waiting delivery: its cost followed
-- the number of endpoints, ~116 ms per claim at 10,000 and seconds at 100,000. Now it reads only
-- endpoints whose ready_at has come, through a partial index: its cost follows the due work.
--
-- ready_at is null when the endpoint has no waiting (pending/retryable) delivery; otherwise the
-- earliest next_attempt_at among them, pushed back to the end of the endpoint's lease while an
-- enabled endpoint is leased. A disabled or deleted endpoint with waiting deliveries stays ready
-- (the claim discards them); one without leaves the claim path for good.
--
-- A derived index of the projections, not a projection of its own: the write primitive
-- (store/src/ledger-write.ts) refreshes the rows of every endpoint a write touches, in the same
-- transaction, from this one definition; `ledger replay --verify` checks it against it.
create view endpoint_queue_expected as
select e.id as endpoint_id, e.owner_id,
  case
    when h.due is null then null
    when e.enabled and e.deleted_at is null and e.busy_until is not null then greatest(h.due, e.busy_until)
    else h.due
  end as ready_at
from endpoints e
cross join lateral (
  select min(d.next_attempt_at) as due from deliveries d
  where d.endpoint_id = e.id and d.state in ('pending', 'retryable')
) h;

create table endpoint_queue (
  endpoint_id uuid primary key references endpoints (id) on delete cascade,
  owner_id    text not null,
  ready_at    timestamptz
);
create index endpoint_queue_ready_idx on endpoint_queue (ready_at, endpoint_id) where ready_at is not null;

insert into endpoint_queue (endpoint_id, owner_id, ready_at)
select endpoint_id, owner_id, ready_at from endpoint_queue_expected;
