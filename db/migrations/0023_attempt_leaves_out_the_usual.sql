-- 0023 ledger format 5: an attempt leaves out what is usual, a claim names its lease's length.
--
-- In the drain (`npm run bench -- --only=drain,footprint`, `ledger_by_kind`) a
-- `delivery.attempted` payload was 288 of its row's 463 bytes, and almost every one carried
-- `"counted": true`, `"run": 1` and `"error": null`. From this format on they are left out when
-- they hold those values (core ledger-format.ts `attemptPayloadWritten`; `attemptPayloadOf`
-- fills them back in). A `delivery.claimed` entry names its lease as `lease_ms`, its length from
-- the entry's `occurred_at`, instead of `lease_until`, a 24-character timestamp
-- (`claimLeaseUntil` reads either). Rows sealed in formats 1–4 keep their meaning, and a ledger
-- of every format replays and verifies as one.
update hookledger_entry_kinds
   set fields = '{"attempt":"number","started_at":"string","duration_ms":"number","outcome":"string","signed_with":"array"}'
 where kind = 'delivery.attempted';
update hookledger_entry_kinds set fields = '{"lease_ms":"number"}' where kind = 'delivery.claimed';

-- The attempt history reads the values format 5 leaves out as it writes them.
create or replace view delivery_attempts as
  select
    l.position                                 as ledger_position,
    l.delivery_id,
    (l.payload ->> 'attempt')::integer         as attempt,
    coalesce((l.payload ->> 'counted')::boolean, true) as counted,
    coalesce((l.payload ->> 'run')::integer, 1)        as run,
    l.owner_id,
    (l.payload ->> 'started_at')::timestamptz  as started_at,
    (l.payload ->> 'duration_ms')::integer     as duration_ms,
    (l.payload ->> 'status_code')::integer     as status_code,
    l.payload ->> 'error'                      as error,
    l.payload ->> 'outcome'                    as outcome,
    array(select jsonb_array_elements_text(l.payload -> 'signed_with')) as signed_with,
    l.actor
  from ledger l
  where l.kind = 'delivery.attempted';
