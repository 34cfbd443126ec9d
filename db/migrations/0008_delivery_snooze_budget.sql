-- The snooze budget: how many Retry-After snoozes a delivery's current run has taken, and
-- their total delay. The worker stops honouring Retry-After for free once either passes its
-- setting (HOOKLEDGER_SNOOZE_MAX_COUNT / HOOKLEDGER_SNOOZE_MAX_HOURS).
alter table deliveries
  add column snoozes integer not null default 0,
  add column snoozed_ms integer not null default 0;

-- Existing rows get what replaying their ledger gives: the snoozes since the run began (the
-- last redelivery, or the enqueue). This derives the new columns from ledger entries already
-- written, so it adds no entry of its own; the projection guard is off for this one statement.
alter table deliveries disable trigger deliveries_need_ledger_entry;
update deliveries d set snoozes = s.n, snoozed_ms = s.ms
from (
  select l.delivery_id, count(*)::integer as n, sum((l.payload->>'retry_after_ms')::bigint)::integer as ms
  from ledger l
  where l.kind = 'delivery.snoozed'
    and l.position > coalesce(
      (select max(r.position) from ledger r where r.delivery_id = l.delivery_id and r.kind = 'delivery.redelivered'), 0)
  group by l.delivery_id
) s
where d.id = s.delivery_id;
alter table deliveries enable trigger deliveries_need_ledger_entry;
