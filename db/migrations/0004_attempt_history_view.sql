-- hookledger schema, version 4: the attempt history is read straight from the ledger.
-- Every `delivery.attempted` entry already carries the whole attempt (number, run, start,
-- duration, status, error, outcome, signing key ids), so a table copying it was a second write
-- per attempt and ~250 bytes per delivery. The view keeps the same name and columns; it cannot
-- drift from the ledger, and `ledger replay --verify` still compares it with the rows the core
-- fold derives from the same entries.
drop table delivery_attempts;

create view delivery_attempts as
  select
    l.position                                 as ledger_position,
    l.delivery_id,
    (l.payload ->> 'attempt')::integer         as attempt,
    (l.payload ->> 'counted')::boolean         as counted,
    (l.payload ->> 'run')::integer             as run,
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
