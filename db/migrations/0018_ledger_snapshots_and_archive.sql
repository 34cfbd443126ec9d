-- hookledger schema, version 18: projection snapshots inside signed checkpoints, and archives.
--
-- A snapshot is the fold of every ledger entry below a position P into the projections
-- (endpoints and deliveries), stored as rows beside the ledger and summarised by a SHA-256
-- digest. P is cut under a brief SHARE lock on the ledger, so every row below it is committed
-- and a transaction's rows never straddle it (docs/ledger.md §7). The first checkpoint that
-- seals every row below P carries the snapshot's descriptor in its signed message; replay and
-- `ledger verify` then start from the snapshot and read only the entries at or after P.
--
-- An archive writes a range of whole checkpoints to a file (the export format, verifiable with
-- the public key alone) and then drops the ledger partitions all of whose rows those
-- checkpoints sealed, through the audited retention function, which now records which
-- checkpoint the archive reaches and the file's digest.

create table ledger_snapshots (
  seq              bigint primary key,
  -- Every entry below this position is folded in; none at or after it.
  before_position  bigint not null,
  -- The oldest transaction running at the cut: every row at or after before_position has a
  -- tx_id at or above it, so the chain from the last checkpoint below it covers them all.
  horizon          xid8 not null,
  digest           text not null,
  endpoints        bigint not null,
  deliveries       bigint not null,
  -- The snapshot it was folded from (null: from the ledger's beginning).
  base_seq         bigint,
  created_at       timestamptz not null
);

-- The rows in chunks: each a JSON array of up to 256 rows in id order, each row as
-- `to_jsonb(<endpoints|deliveries row>)` renders it. A chunk is large enough to be compressed
-- (TOAST), so a snapshot costs a fraction of the live table instead of a row and an index
-- entry per row.
create table ledger_snapshot_rows (
  snapshot_seq bigint not null,
  entity       text not null check (entity in ('endpoint', 'delivery')),
  chunk        integer not null,
  rows         jsonb not null,
  primary key (snapshot_seq, entity, chunk)
);

-- The signed descriptor {seq, before_position, horizon, digest, endpoints, deliveries} of the
-- snapshot a checkpoint carries; null for most checkpoints.
alter table ledger_checkpoints add column snapshot jsonb;
create unique index ledger_checkpoints_snapshot_idx on ledger_checkpoints (((snapshot ->> 'seq')::bigint))
  where snapshot is not null;

-- Snapshots are evidence too. Rows of superseded snapshots leave only through
-- hookledger_ledger_snapshots_prune(); descriptors never do.
create trigger ledger_snapshots_append_only
  before update or delete on ledger_snapshots
  for each row execute function hookledger_ledger_append_only();
create trigger ledger_snapshots_no_truncate
  before truncate on ledger_snapshots
  for each statement execute function hookledger_ledger_append_only();
create trigger ledger_snapshot_rows_append_only
  before update or delete on ledger_snapshot_rows
  for each row execute function hookledger_ledger_append_only();
create trigger ledger_snapshot_rows_no_truncate
  before truncate on ledger_snapshot_rows
  for each statement execute function hookledger_ledger_append_only();

-- Deletes the rows of every snapshot older than `keep_from_seq` (their descriptors and the
-- checkpoints that signed them stay). Returns the rows deleted.
create function hookledger_ledger_snapshots_prune(keep_from_seq bigint)
returns bigint
language plpgsql
set search_path from current
as $$
declare
  n bigint;
begin
  perform set_config('hookledger.ledger_retention', 'on', true);
  delete from ledger_snapshot_rows r where r.snapshot_seq < keep_from_seq;
  get diagnostics n = row_count;
  perform set_config('hookledger.ledger_retention', 'off', true);
  return n;
end $$;

-- The archive's record: the retention entries are read by every verification (which
-- checkpoints' rows were dropped, and where the chain resumes).
create index ledger_retention_idx on ledger (position) where kind = 'ledger.retention';

-- The one way rows leave the ledger, now tied to an archive. Every range partition below
-- `before_position` (null: none) is detached and dropped, lowest first; each must hold only rows
-- sealed by checkpoints up to `through_checkpoint` — rows the archive file holds. One
-- `ledger.retention` entry records the archive (through_checkpoint, the file's description),
-- up to where partitions went, and how many rows and partitions; it is appended even when no
-- partition could go, so the next archive continues after this one. Returns the rows dropped.
drop function hookledger_ledger_retention(bigint, text, timestamptz);
create function hookledger_ledger_retention(through_checkpoint bigint, before_position bigint, archive jsonb,
                                            actor text, occurred_at timestamptz)
returns bigint
language plpgsql
set search_path from current
as $$
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
  from ledger_checkpoints c where c.seq = hookledger_ledger_retention.through_checkpoint;
  if not found then
    raise exception 'checkpoint % does not exist', through_checkpoint
      using errcode = 'object_not_in_prerequisite_state';
  end if;
  for p in
    select * from ledger_partitions lp
    where not lp.is_default and before_position is not null
      and lp.to_position <= hookledger_ledger_retention.before_position
    order by lp.to_position
  loop
    execute format('select exists (select 1 from %I r where $1 is null or (r.tx_id, r.position) > ($1, $2))', p.name)
      using sealed_tx, sealed_position into unsealed;
    if unsealed then
      raise exception 'ledger partition % holds rows checkpoint % has not sealed', p.name, through_checkpoint
        using errcode = 'object_not_in_prerequisite_state',
              hint = 'only rows an archive holds leave the ledger (hookledger ledger archive)';
    end if;
    execute format('select count(*) from %I', p.name) into n;
    execute format('alter table ledger detach partition %I', p.name);
    execute format('drop table %I', p.name);
    dropped := dropped + n;
    partitions := partitions + 1;
    reached := p.to_position;
  end loop;
  insert into ledger (occurred_at, owner_id, kind, payload, actor)
  values (hookledger_ledger_retention.occurred_at, '*', 'ledger.retention',
          jsonb_build_object('through_checkpoint', through_checkpoint, 'before_position', reached,
                             'rows', dropped, 'partitions', partitions, 'archive', archive),
          hookledger_ledger_retention.actor);
  return dropped;
end $$;
