-- 0012 the planner's statistics follow a burst.
--
-- hookledger_write's statements are planned once per connection and kept (PL/pgSQL's plan
-- cache); a plan is made again only when a table's statistics change. A new installation's
-- tables start empty, so its first plans are made for empty tables, and a burst — a flood of
-- 200,000 deliveries fanned out in seconds — leaves those plans in place until autovacuum next
-- analyzes (up to a minute, at its default naptime): measured in the fairness bench, the write's
-- check that a delivery is still what it was took 8.6 ms a call (a scan of every delivery)
-- instead of 0.2 ms (one index probe each), and the settles held a core.
--
-- The service calls this after a fan-out that enqueued many deliveries, and its maintenance
-- calls it on every pass: it analyzes the hot tables whose changes since their last analyze are
-- at least p_min_changes and more than a fifth of their rows (so a steady installation, whose
-- tables autovacuum keeps current, never pays for it), and names them. ANALYZE needs the owner;
-- the service may only call this.

create function hookledger_statistics_refresh(p_min_changes bigint) returns text[]
language plpgsql security definer set search_path from current as $$
declare
  t text;
  refreshed text[] := '{}';
begin
  -- Every worker's maintenance asks: one analyzes, the others find the lock taken and go on.
  if not pg_try_advisory_xact_lock(hashtext('hookledger.statistics_refresh')) then
    return refreshed;
  end if;
  for t in
    select s.relname::text from pg_stat_user_tables s join pg_class c on c.oid = s.relid
    where s.schemaname = current_schema()
      and s.relname in ('delivery_origins', 'delivery_states', 'endpoint_queue', 'events', 'endpoints')
      and s.n_mod_since_analyze >= greatest(p_min_changes, 1)
      and s.n_mod_since_analyze > 0.2 * greatest(c.reltuples, 0)
    order by s.relname
  loop
    execute format('analyze %I', t);
    refreshed := refreshed || t;
  end loop;
  return refreshed;
end $$;

-- Pinned as every SECURITY DEFINER function is (the baseline's last step): pg_temp last.
do $$
begin
  execute format('alter function hookledger_statistics_refresh(bigint) set search_path = %I, pg_temp', current_schema());
end $$;
