-- hookledger schema, version 14: every hookledger object lives in one schema of its own
-- (`hookledger` unless HOOKLEDGER_DB_SCHEMA names another), so hookledger can share a database
-- with the application that publishes into it: an application's own `events` or `endpoints`
-- in `public` are never touched, and never shadow hookledger's.
--
-- The target is `current_schema()`: the migrator's connections run with `search_path` set to
-- the configured schema alone (store/src/db-handle.ts), and the migrator created it first.
--
-- Two starting points:
-- * a fresh database: 0001–0013 already ran in the target schema (it was first on the
--   search_path); nothing moves.
-- * a deployment from before this migration: 0001–0013 ran in `public`, and the migrator has
--   just moved its own tables from there (store/src/migrate.ts). Every hookledger object moves
--   here, by name — never "everything in public", which may hold the application's tables.
--   ALTER … SET SCHEMA keeps each object's OID, rows, indexes, constraints, triggers and owned
--   sequences (identity columns), and views keep referring to their tables by OID: no data is
--   copied, and it takes only catalog locks.
--
-- Either way, every hookledger function is pinned to the schema (`set search_path from
-- current`): trigger functions also fire inside an application's transaction (the publisher
-- package inserts into the ledger with the application's own search_path), and their bodies
-- name tables unqualified.
do $$
declare
  target text := current_schema();
  obj record;
begin
  if target is null then
    raise exception 'no schema on the search_path to migrate into';
  end if;
  if target <> 'public' and to_regclass(format('%I.ledger', target)) is null then
    if to_regclass('public.ledger') is null then
      raise exception 'neither %.ledger nor public.ledger exists: this is not a hookledger database at version 13', target;
    end if;
    -- The partitions of the ledger first (each is a table of its own), then the tables, then
    -- the views.
    for obj in
      select c.relname from pg_inherits i
      join pg_class c on c.oid = i.inhrelid
      where i.inhparent = 'public.ledger'::regclass
    loop
      execute format('alter table public.%I set schema %I', obj.relname, target);
    end loop;
    for obj in
      select unnest(array['ledger', 'events', 'endpoints', 'deliveries', 'api_tokens',
                          'access_codes', 'embeds', 'ledger_checkpoints', 'endpoint_queue']) as relname
    loop
      execute format('alter table public.%I set schema %I', obj.relname, target);
    end loop;
    for obj in
      select unnest(array['delivery_attempts', 'endpoint_queue_expected', 'ledger_partitions']) as relname
    loop
      execute format('alter view public.%I set schema %I', obj.relname, target);
    end loop;
    for obj in
      select p.oid::regprocedure as fn from pg_proc p
      join pg_namespace n on n.oid = p.pronamespace
      where n.nspname = 'public' and p.proname like 'hookledger\_%'
    loop
      execute format('alter function %s set schema %I', obj.fn, target);
    end loop;
  end if;
  for obj in
    select p.oid::regprocedure as fn from pg_proc p
    join pg_namespace n on n.oid = p.pronamespace
    where n.nspname = target and p.proname like 'hookledger\_%'
  loop
    execute format('alter function %s set search_path from current', obj.fn);
  end loop;
end $$;
