-- hookledger schema, version 10: rows leave the projections, through the ledger.
--
-- Settled deliveries older than the delivery retention leave `deliveries` (one
-- `deliveries.retired` entry per batch names every row it removes), and a deleted endpoint with
-- nothing left to settle leaves `endpoints` (`endpoint.purged`). Their entries stay in the
-- ledger: replay folds the removal too (core evolve returns no row), so the rebuilt tables
-- match the smaller live ones.

-- The guard of migration 0006, stricter for deletes: a row may leave only with the entry that
-- removes it — a delivery with a `deliveries.retired` entry naming it, an endpoint with its
-- `endpoint.purged` — in the same transaction. Inserts and updates are checked as before.
create or replace function hookledger_projection_has_ledger_entry() returns trigger
language plpgsql as $$
declare
  row_id uuid := coalesce(new.id, old.id);
  found_entry boolean;
  needed text := 'a ledger entry';
begin
  if tg_table_name = 'deliveries' and tg_op = 'DELETE' then
    needed := 'a deliveries.retired entry naming it';
    select exists (
      select 1 from ledger
      where tx_id = pg_current_xact_id() and kind = 'deliveries.retired'
        and payload -> 'delivery_ids' ? row_id::text
    ) into found_entry;
  elsif tg_table_name = 'deliveries' then
    select exists (
      select 1 from ledger
      where delivery_id = row_id and tx_id = pg_current_xact_id()
    ) into found_entry;
  elsif tg_op = 'DELETE' then
    needed := 'its endpoint.purged entry';
    select exists (
      select 1 from ledger
      where endpoint_id = row_id and delivery_id is null and kind = 'endpoint.purged'
        and tx_id = pg_current_xact_id()
    ) into found_entry;
  else
    select exists (
      select 1 from ledger
      where endpoint_id = row_id and delivery_id is null and tx_id = pg_current_xact_id()
    ) or exists (
      select 1 from ledger
      where delivery_id in (new.busy_delivery_id, case when tg_op = 'UPDATE' then old.busy_delivery_id end)
        and endpoint_id = row_id and tx_id = pg_current_xact_id()
    ) into found_entry;
  end if;
  if not found_entry then
    raise exception '% of %.% without % in the same transaction', lower(tg_op), tg_table_name, row_id, needed
      using errcode = 'integrity_constraint_violation',
            hint = 'projections change only through the store''s write primitive, which appends their ledger entries';
  end if;
  return null;
end $$;

-- Retention takes the oldest settled rows first. Only settled rows are in this index (a row
-- enters it when it completes or is discarded, and leaves it when retired or redelivered).
create index deliveries_settled_idx on deliveries (updated_at) where state in ('completed', 'discarded');

-- The purge looks at deleted endpoints only.
create index endpoints_deleted_idx on endpoints (deleted_at) where deleted_at is not null;

-- Replay expands each retirement into one entry per delivery it names; this finds them without
-- reading the whole ledger.
create index ledger_retired_idx on ledger (position) where kind = 'deliveries.retired';
