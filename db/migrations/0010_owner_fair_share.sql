-- 0010 fair share across owners (issue 24 item 1): the claim and the fan-out serve owners in turn.
--
-- The claim walks the owners that have waiting work (a loose index scan: one index descent per
-- owner, whatever their number of endpoints), then reads each ready owner's earliest ready
-- endpoints, and core's fairShareOrder hands the free slots out by weighted share. This index
-- serves both steps: owner by owner, and within an owner by ready time. A suspended owner is
-- skipped (its deliveries wait, nothing changes), and one at its `max_in_flight` gets no more.
create index endpoint_queue_owner_ready_idx on endpoint_queue (owner_id, ready_at, endpoint_id) where ready_at is not null;

-- The fan-out takes owners in turn too (store delivery/fanout.ts): the owners with events not
-- yet fanned out, walked the same way, and each one's oldest events first.
create index events_fanout_owner_idx on events (owner_id, published_at, id) where fanned_out_at is null;
