-- hookledger schema, version 11: the ledger, partitioned by position range.
--
-- A month of traffic is tens of millions of ledger rows; one table means every index and every
-- vacuum covers all time, and rows can leave only by DELETE (dead tuples, bloat). Partitioned by
-- position range, sealed history leaves a whole partition at a time (DROP: instant, no dead
-- tuples) through the one audited retention function, and new partitions are created ahead of
-- the writers (`hookledger_ledger_partitions_ahead`, run by every worker's maintenance).
--
-- The existing table is not copied: it becomes the first partition, [MINVALUE, next position),
-- with its rows, positions, indexes and leaf hashes untouched (its indexes are attached to the
-- new parent's, not rebuilt). A default partition catches rows should the writers ever outrun
-- the partitions made ahead; the next partition then starts above them.

-- The view reads the ledger: dropped and recreated around the swap, unchanged.
drop view delivery_attempts;

-- Where the old identity left off (gaps included): positions continue from there, none repeats.
-- Its identity is dropped (a partition cannot have its own); the values stay.
do $$
begin
  -- …or past the highest row, if rows were ever written with explicit positions.
  perform set_config('hookledger.next_position',
    greatest((select case when is_called then last_value + 1 else last_value end from ledger_position_seq),
             (select coalesce(max(position), 0) + 1 from ledger))::text, true);
  alter table ledger alter column position drop identity;
end $$;

alter table ledger rename to ledger_p_initial;
alter index ledger_pkey rename to ledger_p_initial_pkey;
alter index ledger_endpoint_idx rename to ledger_p_initial_endpoint_idx;
alter index ledger_delivery_id_idx rename to ledger_p_initial_delivery_id_idx;
alter index ledger_chain_order_idx rename to ledger_p_initial_chain_order_idx;
alter index ledger_retired_idx rename to ledger_p_initial_retired_idx;
drop trigger ledger_append_only on ledger_p_initial;
drop trigger ledger_no_truncate on ledger_p_initial;

create table ledger (
  position     bigint generated always as identity,
  tx_id        xid8 not null default pg_current_xact_id(),
  occurred_at  timestamptz not null,
  owner_id     text not null,
  kind         text not null,
  endpoint_id  uuid,
  delivery_id  uuid,
  event_id     text,
  payload      jsonb not null default '{}'::jsonb,
  actor        text not null,
  primary key (position)
) partition by range (position);

create index ledger_endpoint_idx on ledger (endpoint_id, position) where endpoint_id is not null and delivery_id is null;
create index ledger_delivery_id_idx on ledger (delivery_id) where delivery_id is not null;
create index ledger_chain_order_idx on ledger (tx_id, position);
create index ledger_retired_idx on ledger (position) where kind = 'deliveries.retired';

do $$
declare
  next_position bigint := current_setting('hookledger.next_position')::bigint;
begin
  -- The range check lets ATTACH skip its own scan of the rows.
  execute format('alter table ledger_p_initial add constraint ledger_p_initial_range check (position < %s)', next_position);
  execute format('alter table ledger attach partition ledger_p_initial for values from (minvalue) to (%s)', next_position);
  alter table ledger_p_initial drop constraint ledger_p_initial_range;
  execute format('alter table ledger alter column position restart with %s', next_position);
end $$;

create table ledger_p_default partition of ledger default;

-- Append-only, as before (0006): row triggers on the parent are cloned to every partition;
-- TRUNCATE is per table, so each partition carries its own statement trigger.
create trigger ledger_append_only
  before update or delete on ledger
  for each row execute function hookledger_ledger_append_only();
create trigger ledger_no_truncate
  before truncate on ledger
  for each statement execute function hookledger_ledger_append_only();
create trigger ledger_no_truncate before truncate on ledger_p_initial
  for each statement execute function hookledger_ledger_append_only();
create trigger ledger_no_truncate before truncate on ledger_p_default
  for each statement execute function hookledger_ledger_append_only();

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

-- The range partitions of the ledger, in order: name and [from, to) (null: unbounded).
create view ledger_partitions as
  select c.relname::text as name,
         nullif(substring(pg_get_expr(c.relpartbound, c.oid) from 'FROM \(''?([0-9]+)''?\)'), '')::bigint as from_position,
         nullif(substring(pg_get_expr(c.relpartbound, c.oid) from 'TO \(''?([0-9]+)''?\)'), '')::bigint as to_position,
         pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT' as is_default
  from pg_inherits i
  join pg_class c on c.oid = i.inhrelid
  where i.inhparent = 'ledger'::regclass;

-- Creates range partitions of `rows_per_partition` positions after the last one until they
-- reach `ahead` partitions past the next position to be drawn. Each is created on its own and
-- then attached (ATTACH does not block the writers the way CREATE … PARTITION OF does). Rows
-- that reached the default partition stay there; the next partition starts above them.
-- Returns how many partitions it created.
create function hookledger_ledger_partitions_ahead(rows_per_partition bigint, ahead integer)
returns integer
language plpgsql as $$
declare
  next_position bigint;
  next_from bigint;
  next_to bigint;
  created integer := 0;
  part text;
begin
  if rows_per_partition < 1 or ahead < 1 then
    raise exception 'rows_per_partition and ahead must be at least 1';
  end if;
  -- One creator at a time (every worker's maintenance calls this).
  perform pg_advisory_xact_lock(hashtext('hookledger_ledger_partitions_ahead'));
  execute format('select case when is_called then last_value + 1 else last_value end from %s',
                 pg_get_serial_sequence('ledger', 'position')) into next_position;
  select greatest(
           coalesce((select max(lp.to_position) from ledger_partitions lp where not lp.is_default), 1),
           coalesce((select max(d.position) + 1 from ledger_p_default d), 1))
    into next_from;
  while next_from <= next_position + (ahead - 1)::bigint * rows_per_partition loop
    next_to := next_from + rows_per_partition;
    part := format('ledger_p_%s', lpad(next_from::text, 19, '0'));
    execute format('create table %I (like ledger including defaults)', part);
    execute format('alter table %I add constraint %I check (position >= %s and position < %s)',
                   part, part || '_range', next_from, next_to);
    execute format('alter table ledger attach partition %I for values from (%s) to (%s)', part, next_from, next_to);
    execute format('alter table %I drop constraint %I', part, part || '_range');
    execute format('create trigger ledger_no_truncate before truncate on %I for each statement execute function hookledger_ledger_append_only()', part);
    next_from := next_to;
    created := created + 1;
  end loop;
  return created;
end $$;

-- The one way rows leave the ledger (0006), now by whole partitions: every range partition that
-- lies entirely below `before_position` is detached and dropped (instant, no dead tuples), and one
-- `ledger.retention` entry records up to where, how many rows and partitions, and who asked.
-- A partition holding any row not yet sealed by a checkpoint is refused: only sealed history
-- leaves. Rows of a partition that straddles `before_position`, and of the default partition,
-- stay. Returns the number of rows dropped (0, and no entry, when no partition qualifies).
create or replace function hookledger_ledger_retention(before_position bigint, actor text, occurred_at timestamptz)
returns bigint
language plpgsql as $$
declare
  p record;
  sealed_tx xid8;
  sealed_position bigint;
  unsealed boolean;
  n bigint;
  dropped bigint := 0;
  partitions integer := 0;
  reached bigint;
begin
  select c.last_tx_id, c.last_position into sealed_tx, sealed_position
  from ledger_checkpoints c order by c.seq desc limit 1;
  for p in
    select * from ledger_partitions lp
    where not lp.is_default and lp.to_position <= hookledger_ledger_retention.before_position
    order by lp.to_position
  loop
    execute format('select exists (select 1 from %I r where $1 is null or (r.tx_id, r.position) > ($1, $2))', p.name)
      using sealed_tx, sealed_position into unsealed;
    if unsealed then
      raise exception 'ledger partition % holds rows no checkpoint has sealed yet', p.name
        using errcode = 'object_not_in_prerequisite_state',
              hint = 'seal first (hookledger ledger checkpoint); only sealed history leaves the ledger';
    end if;
    execute format('select count(*) from %I', p.name) into n;
    execute format('alter table ledger detach partition %I', p.name);
    execute format('drop table %I', p.name);
    dropped := dropped + n;
    partitions := partitions + 1;
    reached := p.to_position;
  end loop;
  if partitions > 0 then
    insert into ledger (occurred_at, owner_id, kind, payload, actor)
    values (hookledger_ledger_retention.occurred_at, '*', 'ledger.retention',
            jsonb_build_object('before_position', reached, 'rows', dropped, 'partitions', partitions),
            hookledger_ledger_retention.actor);
  end if;
  return dropped;
end $$;

-- The first partitions ahead of the writers (maintenance keeps them ahead from here on).
select hookledger_ledger_partitions_ahead(1000000, 2);
