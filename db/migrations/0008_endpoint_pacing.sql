-- 0008 endpoint pacing (issue 22): the claim's queue head waits for an endpoint's rate limit.
--
-- An endpoint with a `rate_limit` keeps a GCRA bucket as one timestamp, `rate_tat` (0007), moved
-- by each claim (its `delivery.claimed` entry carries the new value, so replay moves it the
-- same). The head is ready when the bucket lets a send through: `rate_tat - (burst - 1) ×
-- interval`, the interval being 1000 / rate milliseconds rounded up — the same arithmetic as
-- core's endpoint/rate-limit.ts, so the claim never even reads a limited endpoint early and
-- never finds one "ready" that its decision would refuse. The rate in force is the adapted one
-- when 429/503 answers lowered it (`rate_adapted_per_second`), else the configured one.
-- Disabled and deleted endpoints stay ready at their due time, whatever their bucket: their
-- deliveries are discarded, not paced.
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
) h;
