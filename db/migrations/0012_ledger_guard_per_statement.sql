-- hookledger schema, version 12: the projection guard checks each statement as a set.
--
-- Migrations 0006 and 0010 checked every changed row of `deliveries` and `endpoints` with a
-- deferred row trigger: at commit, one function call and one ledger probe per row. A fan-out to
-- 10,000 endpoints spent ~2 s in its commit on them, and every claim and settle paid ~0.2 ms per
-- row. The rule is unchanged — a projection row changes only with a ledger entry about it in
-- the same transaction (a delete only with the entry that removes it) — but it is now checked
-- once per statement, over the statement's transition tables, with one anti-join against the
-- transaction's own entries (found through ledger_chain_order_idx (tx_id, position)).
--
-- It is also checked sooner: at the end of the statement rather than at commit. The write
-- primitive appends the entries in the same statement as the rows they justify (one statement
-- of data-modifying CTEs; AFTER STATEMENT triggers fire once all of them ran, and see them), so
-- nothing the product writes is refused; a change without its entry fails at once.

drop trigger deliveries_need_ledger_entry on deliveries;
drop trigger endpoints_need_ledger_entry on endpoints;
drop function hookledger_projection_has_ledger_entry();

create function hookledger_guard_refuse(op text, tbl text, row_id uuid, needed text) returns void
language plpgsql as $$
begin
  raise exception '% of %.% without % in the same transaction', op, tbl, row_id, needed
    using errcode = 'integrity_constraint_violation',
          hint = 'projections change only through the store''s write primitive, which appends their ledger entries';
end $$;

-- deliveries: an insert or update needs an entry naming the delivery; a delete needs a
-- `deliveries.retired` entry listing it.
create function hookledger_deliveries_guard() returns trigger
language plpgsql as $$
declare
  bad uuid;
begin
  if tg_op = 'DELETE' then
    select o.id into bad from old_rows o
    where not exists (
      select 1 from ledger l
      where l.tx_id = pg_current_xact_id() and l.kind = 'deliveries.retired' and l.payload -> 'delivery_ids' ? o.id::text)
    limit 1;
    if bad is not null then perform hookledger_guard_refuse('delete', 'deliveries', bad, 'a deliveries.retired entry naming it'); end if;
  else
    with mine as materialized (
      select l.delivery_id from ledger l where l.tx_id = pg_current_xact_id() and l.delivery_id is not null
    )
    select n.id into bad from new_rows n
    where not exists (select 1 from mine m where m.delivery_id = n.id)
    limit 1;
    if bad is not null then perform hookledger_guard_refuse(lower(tg_op), 'deliveries', bad, 'a ledger entry'); end if;
  end if;
  return null;
end $$;

create trigger deliveries_insert_needs_ledger_entry after insert on deliveries
  referencing new table as new_rows for each statement execute function hookledger_deliveries_guard();
create trigger deliveries_update_needs_ledger_entry after update on deliveries
  referencing new table as new_rows for each statement execute function hookledger_deliveries_guard();
create trigger deliveries_delete_needs_ledger_entry after delete on deliveries
  referencing old table as old_rows for each statement execute function hookledger_deliveries_guard();

-- endpoints: an endpoint entry (no delivery), or the delivery entry that took or released the
-- endpoint's lease (busy_delivery_id before or after the change); a delete needs its
-- `endpoint.purged` entry.
create function hookledger_endpoints_guard() returns trigger
language plpgsql as $$
declare
  bad uuid;
begin
  if tg_op = 'DELETE' then
    select o.id into bad from old_rows o
    where not exists (
      select 1 from ledger l
      where l.tx_id = pg_current_xact_id() and l.kind = 'endpoint.purged' and l.endpoint_id = o.id and l.delivery_id is null)
    limit 1;
    if bad is not null then perform hookledger_guard_refuse('delete', 'endpoints', bad, 'its endpoint.purged entry'); end if;
    return null;
  end if;
  if tg_op = 'INSERT' then
    with mine as materialized (
      select l.endpoint_id, l.delivery_id from ledger l where l.tx_id = pg_current_xact_id() and l.endpoint_id is not null
    )
    select n.id into bad from new_rows n
    where not exists (
      select 1 from mine m where m.endpoint_id = n.id and (m.delivery_id is null or m.delivery_id = n.busy_delivery_id))
    limit 1;
  else
    with mine as materialized (
      select l.endpoint_id, l.delivery_id from ledger l where l.tx_id = pg_current_xact_id() and l.endpoint_id is not null
    )
    select n.id into bad from new_rows n join old_rows o on o.id = n.id
    where not exists (
      select 1 from mine m
      where m.endpoint_id = n.id and (m.delivery_id is null or m.delivery_id = n.busy_delivery_id or m.delivery_id = o.busy_delivery_id))
    limit 1;
  end if;
  if bad is not null then perform hookledger_guard_refuse(lower(tg_op), 'endpoints', bad, 'a ledger entry'); end if;
  return null;
end $$;

create trigger endpoints_insert_needs_ledger_entry after insert on endpoints
  referencing new table as new_rows for each statement execute function hookledger_endpoints_guard();
create trigger endpoints_update_needs_ledger_entry after update on endpoints
  referencing new table as new_rows old table as old_rows for each statement execute function hookledger_endpoints_guard();
create trigger endpoints_delete_needs_ledger_entry after delete on endpoints
  referencing old table as old_rows for each statement execute function hookledger_endpoints_guard();
