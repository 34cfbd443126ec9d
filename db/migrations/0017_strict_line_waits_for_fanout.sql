-- 0017 a strict line waits for the events not yet fanned out that come before its head.
--
-- Two fan-outs running side by side split one publish batch between them (each locks the
-- events it reaches first, `skip locked`). The one holding the later events could commit first
-- and claim a strict endpoint's head among the deliveries it could see — a later event —
-- while the earlier events' deliveries were still being written by the other: seen once as
-- evt_00027 delivered before evt_00000 in the strict-order fault test. The claim now reads an
-- owner's earliest event not yet fanned out (in its own snapshot) and leaves a strict line's
-- deliveries after it waiting (store delivery/delivery-next.ts); this index makes that one
-- probe. Partial: only the fan-out's backlog is in it.

create index events_unfanned_line_idx on events (owner_id, occurred_at, id) where fanned_out_at is null;
