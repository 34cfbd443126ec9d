-- 0016 the planner's statistics follow a table's size, not its updates.
--
-- hookledger_statistics_refresh (0012) analyzed a hot table once its changes since the last
-- analyze passed a fifth of its rows. A delivery is one insert and two updates, so during a
-- drain of deliveries already enqueued — the table's size unchanged — it analyzed
-- `delivery_states` every ~2,000 settles of a 20,000-delivery backlog: 10 calls and ~500 ms of
-- PostgreSQL in a 6.5-second drain by `serve --role worker` (`serve-drain --stats`), a sixth of
-- the drain's database time. What it is for is a burst that changes how big a table is: plans
-- made when it was small (a scan of a table believed empty) stay until the statistics change.
-- Now a table is analyzed when its live rows differ from what the planner believes
-- (`pg_class.reltuples`) by at least p_min_changes and by more than a fifth; updates, which
-- autovacuum's own analyze follows, no longer count.

create or replace function hookledger_statistics_refresh(p_min_changes bigint) returns text[]
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
      and abs(s.n_live_tup - greatest(c.reltuples, 0)) >= greatest(p_min_changes, 1)
      and abs(s.n_live_tup - greatest(c.reltuples, 0)) > 0.2 * greatest(c.reltuples, 0)
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
