-- hookledger schema, version 6: the database enforces "the ledger is the truth".
--
-- 1. The ledger is append-only. UPDATE, DELETE and TRUNCATE raise, except inside the one
--    audited retention function below (it drops whole sealed ranges and says so in the ledger).
-- 2. A projection row (endpoints, deliveries) may change only in a transaction that appends a
--    ledger entry about that row: a deferred constraint trigger checks it at commit, so a write
--    that skips the write primitive fails loudly instead of drifting from the ledger.
-- 3. Chain order: (tx_id, position). Positions are drawn at insert, but a transaction takes its
--    xid earlier (its first write), so positions alone can commit out of order; below the
--    oldest running transaction, (tx_id, position) order is final. Readers and the sealer
--    follow it through this index.
--
-- A superuser can still bypass triggers (session_replication_role = replica); the hash chain
-- and the signed checkpoints are what detect that.

create index ledger_chain_order_idx on ledger (tx_id, position);

create function hookledger_ledger_append_only() returns trigger
language plpgsql as $$
begin
  if current_setting('hookledger.ledger_retention', true) = 'on' then
    return old;
  end if;
  raise exception 'the ledger is append-only: % refused', tg_op
    using errcode = 'insufficient_privilege',
          hint = 'ledger rows are never changed; sealed ranges leave only through hookledger_ledger_retention()';
end $$;

create trigger ledger_append_only
  before update or delete on ledger
  for each row execute function hookledger_ledger_append_only();

create trigger ledger_no_truncate
  before truncate on ledger
  for each statement execute function hookledger_ledger_append_only();

-- Every projection change needs its ledger entry in the same transaction. Deliveries: an entry
-- naming the delivery. Endpoints: an endpoint entry (no delivery), or the delivery entry that
-- took or released the endpoint's lease (busy_delivery_id before or after the change).
create function hookledger_projection_has_ledger_entry() returns trigger
language plpgsql as $$
declare
  row_id uuid := coalesce(new.id, old.id);
  found_entry boolean;
begin
  if tg_table_name = 'deliveries' then
    select exists (
      select 1 from ledger
      where delivery_id = row_id and tx_id = pg_current_xact_id()
    ) into found_entry;
  else
    select exists (
      select 1 from ledger
      where endpoint_id = row_id and delivery_id is null and tx_id = pg_current_xact_id()
    ) or exists (
      select 1 from ledger
      where delivery_id in (
          case when tg_op <> 'DELETE' then new.busy_delivery_id end,
          case when tg_op <> 'INSERT' then old.busy_delivery_id end)
        and endpoint_id = row_id and tx_id = pg_current_xact_id()
    ) into found_entry;
  end if;
  if not found_entry then
    raise exception '% of %.% without a ledger entry in the same transaction', lower(tg_op), tg_table_name, row_id
      using errcode = 'integrity_constraint_violation',
            hint = 'projections change only through the store''s write primitive, which appends their ledger entries';
  end if;
  return null;
end $$;

create constraint trigger deliveries_need_ledger_entry
  after insert or update or delete on deliveries
  deferrable initially deferred
  for each row execute function hookledger_projection_has_ledger_entry();

create constraint trigger endpoints_need_ledger_entry
  after insert or update or delete on endpoints
  deferrable initially deferred
  for each row execute function hookledger_projection_has_ledger_entry();

-- The one way rows leave the ledger: whole ranges below a position, and only with an entry
-- that records what was dropped (who, how many, up to where). Later migrations point it at
-- partitions; until then it deletes.
create function hookledger_ledger_retention(before_position bigint, actor text, occurred_at timestamptz)
returns bigint
language plpgsql as $$
declare
  dropped bigint;
begin
  perform set_config('hookledger.ledger_retention', 'on', true);
  delete from ledger where position < before_position;
  get diagnostics dropped = row_count;
  perform set_config('hookledger.ledger_retention', 'off', true);
  insert into ledger (occurred_at, owner_id, kind, payload, actor)
  values (occurred_at, '*', 'ledger.retention',
          jsonb_build_object('before_position', before_position, 'rows', dropped), actor);
  return dropped;
end $$;
