-- The ledger as one growing transparency log (C2SP tlog-tiles, tlog-checkpoint, signed-note).
--
-- Each checkpoint used to hold a Merkle tree of its own rows alone. Now every sealed row is also
-- a leaf of one cumulative RFC 6962 tree, in chain order: a row's leaf index is its sealed
-- ordinal, and the tree's size after a checkpoint is the checkpoint's `total`. A leaf's entry is
-- the 32-byte commitment SHA-256(canonical row bytes), so the public parts of the log (tiles,
-- entry bundles, checkpoints) carry no owner's data; its leaf hash is SHA-256(0x00 ‖ entry).
--
-- * `ledger_log` names the log: its origin, stable for the installation (the first line of
--   every checkpoint note and the key name of its signatures).
-- * `ledger_tree_tiles` holds the tree as tlog-tiles serves it: tile (level, index) is the
--   hashes at height 8·level, indexes 256·index … 256·index + 255; level -1 holds the entries
--   (the commitments). A tile grows by appending until it is full, and never changes otherwise:
--   so a partial tile of any older size is a prefix of the stored one, and serving a tile reads
--   no ledger row. Archived rows keep their tiles.
-- * Each checkpoint keeps the signed note of the tree at its size (`tree_note`) and the tree's
--   right edge (`tree_edge`: the roots of the perfect subtrees of its size, largest first), so
--   the next seal extends the tree without reading a tile.

create table ledger_log (
  singleton boolean primary key default true check (singleton),
  origin    text not null check (origin ~ '^[^\s+]+$' and octet_length(origin) <= 255),
  created_at timestamptz not null
);

create table ledger_tree_tiles (
  level  smallint not null check (level between -1 and 63),
  index  bigint not null check (index >= 0),
  hashes bytea not null check (octet_length(hashes) between 32 and 8192 and octet_length(hashes) % 32 = 0),
  primary key (level, index)
);
-- A tile only grows: an update keeps every hash it had. Nothing deletes a tile.
create function hookledger_tree_tile_grows() returns trigger
language plpgsql set search_path from current as $$
begin
  if tg_op = 'UPDATE' and new.level = old.level and new.index = old.index
     and octet_length(new.hashes) > octet_length(old.hashes)
     and substring(new.hashes from 1 for octet_length(old.hashes)) = old.hashes then
    return new;
  end if;
  raise exception 'tree tiles only grow: % on tile (%, %) refused', tg_op, old.level, old.index
    using errcode = 'insufficient_privilege';
end $$;
create trigger ledger_tree_tiles_grow_only
  before update or delete on ledger_tree_tiles
  for each row execute function hookledger_tree_tile_grows();
create trigger ledger_tree_tiles_no_truncate
  before truncate on ledger_tree_tiles
  for each statement execute function hookledger_ledger_append_only();
create trigger ledger_log_append_only
  before update or delete on ledger_log
  for each row execute function hookledger_ledger_append_only();
create trigger ledger_log_no_truncate
  before truncate on ledger_log
  for each statement execute function hookledger_ledger_append_only();

alter table ledger_checkpoints add column tree_note text, add column tree_edge bytea;
-- Whose note names which size: one checkpoint per tree size carries the tree (a forced
-- checkpoint that seals nothing new signs the same size again under its own seq).
create index ledger_checkpoints_tree_size_idx on ledger_checkpoints (total) where tree_note is not null;

-- Sealing, now with the tree: besides sealing exactly the rows after the previous checkpoint
-- (unchanged), a checkpoint that carries a tree names the installation's origin, a note of the
-- size it seals, and the tiles that grew. Earlier checkpoints without a tree stay as they were;
-- once one carries a tree, every later one must. The bulk travels as bytea beside the jsonb
-- header (the leaves, and the tiles' new hashes concatenated in the order `tiles` lists them),
-- not as hex inside it: a 20,000-row seal was 2.6 MB of JSON to build, scan and decode.
drop function hookledger_checkpoint_append(jsonb);
create function hookledger_checkpoint_append(p jsonb, p_leaf_hashes bytea, p_tiles bytea) returns void
language plpgsql security definer set search_path from current as $$
declare
  c ledger_checkpoints;
  prev ledger_checkpoints;
  positions bigint[];
  known_origin text;
  tile jsonb;
  at integer := 1;
  len integer;
begin
  c := jsonb_populate_record(null::ledger_checkpoints, p - 'tree_edge_hex' - 'tiles' - 'origin');
  c.leaf_hashes := p_leaf_hashes;
  c.tree_edge := decode(p ->> 'tree_edge_hex', 'hex');
  perform pg_advisory_xact_lock(hashtext('hookledger.checkpoint_append'));
  select * into prev from ledger_checkpoints order by seq desc limit 1;
  if c.seq is distinct from coalesce(prev.seq, 0) + 1 then
    perform hookledger_refuse('checkpoint_seq', format('checkpoint %s does not follow %s', c.seq, coalesce(prev.seq, 0)));
  end if;
  if c.count > 0 and c.last_tx_id >= pg_snapshot_xmin(pg_current_snapshot()) then
    perform hookledger_refuse('checkpoint_horizon', 'a checkpoint seals only rows of finished transactions');
  end if;
  select coalesce(array_agg(l.position order by l.tx_id, l.position), '{}') into positions
  from ledger l
  where (prev.last_tx_id is null or (l.tx_id, l.position) > (prev.last_tx_id, prev.last_position))
    and c.last_tx_id is not null and (l.tx_id, l.position) <= (c.last_tx_id, c.last_position);
  if positions is distinct from c.leaf_positions or cardinality(positions) <> c.count then
    perform hookledger_refuse('checkpoint_rows', format('checkpoint %s does not seal exactly the rows after checkpoint %s', c.seq, coalesce(prev.seq, 0)));
  end if;
  if c.total <> coalesce(prev.total, 0) + c.count then
    perform hookledger_refuse('checkpoint_total', 'a checkpoint''s total is the previous total plus its count');
  end if;
  if c.tree_note is null then
    if prev.tree_note is not null then
      perform hookledger_refuse('checkpoint_tree', 'every checkpoint after the first with a tree carries the tree');
    end if;
  else
    if c.tree_edge is null or octet_length(c.tree_edge) % 32 <> 0 then
      perform hookledger_refuse('checkpoint_tree', 'a checkpoint with a tree carries its right edge');
    end if;
    select origin into known_origin from ledger_log;
    if known_origin is null then
      insert into ledger_log (origin, created_at) values (p ->> 'origin', now());
      known_origin := p ->> 'origin';
    end if;
    -- The note's first two lines are the origin and the size: the size the rows say.
    if split_part(c.tree_note, E'\n', 1) is distinct from known_origin then
      perform hookledger_refuse('checkpoint_origin', format('the log''s origin is %s', known_origin));
    end if;
    if split_part(c.tree_note, E'\n', 2) is distinct from c.total::text then
      perform hookledger_refuse('checkpoint_tree', format('checkpoint %s seals a tree of %s rows', c.seq, c.total));
    end if;
    -- Each tile grows at its end: `offset` is the width it must have now (0: a new tile), and
    -- its `count` new hashes are the next 32 × count bytes of p_tiles.
    for tile in select * from jsonb_array_elements(coalesce(p -> 'tiles', '[]'::jsonb)) loop
      len := 32 * (tile ->> 'count')::integer;
      if len <= 0 or at + len - 1 > octet_length(p_tiles) then
        perform hookledger_refuse('checkpoint_tiles', 'the tiles list more hashes than were sent');
      end if;
      if (tile ->> 'offset')::integer = 0 then
        insert into ledger_tree_tiles (level, index, hashes)
        values ((tile ->> 'level')::smallint, (tile ->> 'index')::bigint, substring(p_tiles from at for len))
        on conflict (level, index) do nothing;
        if not found then
          perform hookledger_refuse('checkpoint_tiles', format('tile (%s, %s) exists already', tile ->> 'level', tile ->> 'index'));
        end if;
      else
        update ledger_tree_tiles t set hashes = t.hashes || substring(p_tiles from at for len)
        where t.level = (tile ->> 'level')::smallint and t.index = (tile ->> 'index')::bigint
          and octet_length(t.hashes) = 32 * (tile ->> 'offset')::integer;
        if not found then
          perform hookledger_refuse('checkpoint_tiles', format('tile (%s, %s) is not %s hashes wide', tile ->> 'level', tile ->> 'index', tile ->> 'offset'));
        end if;
      end if;
      at := at + len;
    end loop;
    if at - 1 <> coalesce(octet_length(p_tiles), 0) then
      perform hookledger_refuse('checkpoint_tiles', 'hashes were sent that no tile takes');
    end if;
  end if;
  insert into ledger_checkpoints values (c.*);
end $$;

-- The composition root names the log before anything seals: the configured origin is kept if the
-- log has none yet; the stored one is answered either way (a different one is the caller's error).
create function hookledger_log_origin_ensure(p_origin text) returns text
language plpgsql security definer set search_path from current as $$
declare
  known text;
begin
  perform pg_advisory_xact_lock(hashtext('hookledger.checkpoint_append'));
  select origin into known from ledger_log;
  if known is null then
    insert into ledger_log (origin, created_at) values (p_origin, now());
    known := p_origin;
  end if;
  return known;
end $$;

-- Witnesses' cosignatures (C2SP tlog-cosignature) of the log's checkpoints, as each witness
-- answered an add-checkpoint request: the signature line, verified with the witness's key
-- before it is kept. /log/checkpoint and receipts carry them after the log's own signature.
create table ledger_cosignatures (
  tree_size   bigint not null,
  witness     text not null,
  line        text not null,
  cosigned_at timestamptz not null,
  primary key (tree_size, witness)
);
create trigger ledger_cosignatures_append_only
  before update or delete on ledger_cosignatures
  for each row execute function hookledger_ledger_append_only();
create trigger ledger_cosignatures_no_truncate
  before truncate on ledger_cosignatures
  for each statement execute function hookledger_ledger_append_only();

create function hookledger_cosignature_add(p jsonb) returns void
language plpgsql security definer set search_path from current as $$
begin
  if not exists (select 1 from ledger_checkpoints where total = (p ->> 'tree_size')::bigint and tree_note is not null) then
    perform hookledger_refuse('cosignature_size', format('the log signed no tree of %s rows', p ->> 'tree_size'));
  end if;
  insert into ledger_cosignatures (tree_size, witness, line, cosigned_at)
  values ((p ->> 'tree_size')::bigint, p ->> 'witness', p ->> 'line', (p ->> 'cosigned_at')::timestamptz)
  on conflict (tree_size, witness) do nothing;
end $$;

-- As the baseline ends: the functions this migration made or replaced, pinned like the rest.
do $$
declare
  fn record;
begin
  for fn in
    select p.oid::regprocedure as sig from pg_proc p
    join pg_namespace n on n.oid = p.pronamespace
    where n.nspname = current_schema() and p.proname like 'hookledger\_%'
      and (p.prosecdef or p.prorettype = 'trigger'::regtype)
  loop
    execute format('alter function %s set search_path = %I, pg_temp', fn.sig, current_schema());
  end loop;
end $$;
