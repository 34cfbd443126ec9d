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
-- A claim must name its lease, as `lease_ms` or, from a worker of the version before (format 4),
-- as `lease_until`: such a worker keeps claiming while this migration runs ahead of its restart
-- (operations.md). The kinds table names fields every entry of a kind needs, so the either-or is
-- a rule of its own in hookledger_entries_problem, restated whole with it (0001's otherwise).
update hookledger_entry_kinds set fields = '{}' where kind = 'delivery.claimed';

create or replace function hookledger_entries_problem(p_entries hookledger_entry[], p_owner text) returns text
language sql stable as $$
  select coalesce(
    (select case
        when e.kind is null or jsonb_typeof(e.payload) is distinct from 'object' then 'an entry needs a kind and an object payload'
        when e.owner_id is null or e.actor is null or e.occurred_at is null then e.kind || ': owner_id, actor and occurred_at are required'
        when p_owner <> '*' and e.owner_id <> p_owner then e.kind || ': entry of owner ' || e.owner_id || ' in a write for ' || p_owner
        when e.kind in ('event.published', 'event.pruned', 'ledger.retention') then e.kind || ': appended only by its own function (publish, prune, retention), never by hookledger_write'
        when e.kind like 'endpoint.%' and e.endpoint_id is null then e.kind || ': endpoint_id is required'
        when e.kind like 'delivery.%' and (e.delivery_id is null or e.endpoint_id is null or e.event_id is null) then e.kind || ': delivery_id, endpoint_id and event_id are required'
        when e.kind = 'delivery.claimed' then 'delivery.claimed: payload.lease_ms must be a number (payload.lease_until a string, from a worker of ledger format 4)'
        else e.kind || ': unknown entry kind' end
     from unnest(p_entries) e
     where e.kind is null or jsonb_typeof(e.payload) is distinct from 'object' or e.owner_id is null or e.actor is null
        or e.occurred_at is null or (p_owner <> '*' and e.owner_id <> p_owner)
        or (e.kind like 'endpoint.%' and e.endpoint_id is null)
        or (e.kind like 'delivery.%' and (e.delivery_id is null or e.endpoint_id is null or e.event_id is null))
        or e.kind not in (select k.kind from hookledger_entry_kinds k)
        or (e.kind = 'delivery.claimed' and jsonb_typeof(e.payload -> 'lease_ms') is distinct from 'number'
            and jsonb_typeof(e.payload -> 'lease_until') is distinct from 'string')
     order by e.n limit 1),
    (select e.kind || ': payload.' || f.key || ' must be a ' || f.value
     from (select k.kind, x.key, x.value from hookledger_entry_kinds k cross join lateral jsonb_each_text(k.fields) x) f
     join unnest(p_entries) e on e.kind = f.kind
     where jsonb_typeof(e.payload -> f.key) is distinct from f.value
     order by e.n, f.key limit 1))
$$;

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
