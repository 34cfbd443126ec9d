-- 0022 ledger format 4: a claim names its worker once, as the entry's actor.
--
-- A `delivery.claimed` entry carried the claiming worker twice: as its actor and as
-- `payload.worker`, always the same string (core claim-decider.ts wrote `ctx.actor` into both).
-- In the drain that is 45 of a claim row's 263 bytes (`npm run bench -- --only=drain,footprint`,
-- `ledger_by_kind`). From this format on the payload holds the lease alone (`lease_until`, and
-- `rate_tat` on a rate-limited endpoint); the fold reads the worker from the payload when an
-- older entry has it and from the actor otherwise, so rows sealed in formats 1–3 keep their
-- meaning and a ledger of every format replays and verifies as one.
update hookledger_entry_kinds set fields = '{"lease_until":"string"}' where kind = 'delivery.claimed';
