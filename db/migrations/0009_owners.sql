-- 0009 owners as first-class objects, with limits (issue 24 item 2).
--
-- * Owners were only strings. An owner without a row here has the defaults: weight 1, no limits,
--   not suspended. A row is made lazily, by the owner's first `owner.*` entry (no backfill), so
--   replay rebuilds exactly the rows the ledger made.
-- * A row follows from its ledger entries alone, like the security tables:
--   `owner.limits_set` sets the limits its payload names (null clears), `owner.suspended` and
--   `owner.resumed` mark it. hookledger_write applies them (through hookledger_security_apply);
--   a direct write is refused.
-- * `publish_tat` is the publish limiter's GCRA bucket (theoretical arrival time), state and not
--   history: hookledger_publish advances it in the same statement as the publish, so the limit
--   holds across API processes, on the clock the caller passes (the database's when null).
-- * The claim (fair share, max in flight: issue 24 item 1) reads weight, max_in_flight, suspended_at.

create table owners (
  id                 text primary key check (id <> '' and id <> '*'),
  weight             integer not null default 1 check (weight between 1 and 1000),
  publish_per_second double precision check (publish_per_second is null or (publish_per_second > 0 and publish_per_second <= 1000000)),
  publish_burst      integer check (publish_burst is null or publish_burst between 1 and 1000000),
  max_endpoints      integer check (max_endpoints is null or max_endpoints >= 0),
  max_in_flight      integer check (max_in_flight is null or max_in_flight >= 1),
  suspended_at       timestamptz,
  suspended_reason   text,
  publish_tat        timestamptz,
  created_at         timestamptz not null,
  updated_at         timestamptz not null
);

create trigger owners_one_door before insert or update or delete on owners
  for each statement execute function hookledger_refuse_direct_write();

-- Replay rebuilds the table from these entries without scanning the ledger.
create index ledger_owner_idx on ledger (kind, position)
  where kind in ('owner.limits_set', 'owner.suspended', 'owner.resumed');

insert into hookledger_entry_kinds (kind, fields) values
  ('owner.limits_set', '{"limits":"object"}'),
  ('owner.suspended',  '{"reason":"string"}'),
  ('owner.resumed',    '{}');

-- The owners' rows follow their entries (called by hookledger_security_apply, inside
-- hookledger_write, as the owner). A limit the payload names is set (null: cleared); weight
-- cleared is the default 1.
create function hookledger_owners_apply(p_entries hookledger_entry[]) returns void
language plpgsql as $$
declare
  e record;
  l jsonb;
begin
  for e in select * from unnest(p_entries) w
           where w.kind in ('owner.limits_set', 'owner.suspended', 'owner.resumed')
           order by w.n
  loop
    insert into owners (id, created_at, updated_at) values (e.owner_id, e.occurred_at, e.occurred_at)
    on conflict (id) do nothing;
    case e.kind
      when 'owner.limits_set' then
        l := e.payload -> 'limits';
        update owners set
          weight = case when l ? 'weight' then coalesce((l ->> 'weight')::integer, 1) else weight end,
          publish_per_second = case when l ? 'publish_per_second' then (l ->> 'publish_per_second')::double precision else publish_per_second end,
          publish_burst = case when l ? 'publish_burst' then (l ->> 'publish_burst')::integer else publish_burst end,
          max_endpoints = case when l ? 'max_endpoints' then (l ->> 'max_endpoints')::integer else max_endpoints end,
          max_in_flight = case when l ? 'max_in_flight' then (l ->> 'max_in_flight')::integer else max_in_flight end,
          updated_at = e.occurred_at
        where id = e.owner_id;
      when 'owner.suspended' then
        update owners set suspended_at = e.occurred_at, suspended_reason = e.payload ->> 'reason', updated_at = e.occurred_at
        where id = e.owner_id;
      when 'owner.resumed' then
        update owners set suspended_at = null, suspended_reason = null, updated_at = e.occurred_at
        where id = e.owner_id;
    end case;
  end loop;
end $$;

-- hookledger_write calls hookledger_security_apply by name: 0005's keeps its body under another
-- name, and the new one applies the owners' entries after it.
alter function hookledger_security_apply(hookledger_entry[], jsonb) rename to hookledger_security_apply_0005;
create function hookledger_security_apply(p_entries hookledger_entry[], p_token_hashes jsonb) returns void
language plpgsql as $$
begin
  perform hookledger_security_apply_0005(p_entries, p_token_hashes);
  perform hookledger_owners_apply(p_entries);
end $$;

-- Publish asks the owner's row first, in the same statement: suspended, or over its publish
-- limit, it answers a refusal object (nothing written, the caller's transaction intact) instead
-- of the outcomes array. An owner without a row, or without a publish limit, costs one primary
-- key lookup. The baseline's body is kept as hookledger_publish_internal: hookledger's own
-- events (operational events a settle publishes, a test event) are not the owner's publishes, so
-- neither its limit nor its suspension applies to them (a settle never fails on them). Only the
-- service role may call it (store/src/database/database-roles.ts), never the publisher.
alter function hookledger_publish(text, jsonb, timestamptz, text) rename to hookledger_publish_internal;
create function hookledger_publish(p_owner text, p_events jsonb, p_now timestamptz, p_actor text) returns jsonb
language plpgsql security definer set search_path from current as $$
declare
  v_now timestamptz := coalesce(p_now, statement_timestamp());
  o owners;
  v_period interval;
  v_cost integer;
  v_burst integer;
  v_tat timestamptz;
begin
  select * into o from owners where id = p_owner;
  if found then
    if o.suspended_at is not null then
      return jsonb_build_object('refused', 'owner_suspended', 'suspended_at', o.suspended_at, 'reason', o.suspended_reason);
    end if;
    if o.publish_per_second is not null then
      -- GCRA: each event costs one period; admitted while the bucket's arrival time stays within
      -- `burst` periods of now. A batch larger than the burst is admitted on an empty bucket and
      -- pays its whole cost (the next publishes wait it out), so the long-run rate holds.
      v_period := make_interval(secs => 1.0 / o.publish_per_second);
      v_burst := coalesce(o.publish_burst, greatest(1, ceil(o.publish_per_second)::integer));
      v_cost := jsonb_array_length(p_events);
      update owners set publish_tat = greatest(coalesce(publish_tat, v_now), v_now) + v_period * v_cost
      where id = p_owner
        and greatest(coalesce(publish_tat, v_now), v_now) + v_period * least(v_cost, v_burst) <= v_now + v_period * v_burst
        and suspended_at is null;
      if not found then
        select * into o from owners where id = p_owner;
        if o.suspended_at is not null then
          return jsonb_build_object('refused', 'owner_suspended', 'suspended_at', o.suspended_at, 'reason', o.suspended_reason);
        end if;
        v_tat := greatest(coalesce(o.publish_tat, v_now), v_now) + v_period * least(v_cost, v_burst) - v_period * v_burst;
        return jsonb_build_object('refused', 'owner_rate_limited', 'retry_at', v_tat,
          'publish_per_second', o.publish_per_second, 'publish_burst', v_burst);
      end if;
    end if;
  end if;
  return hookledger_publish_internal(p_owner, p_events, p_now, p_actor);
end $$;

-- As the baseline ends: the functions this migration made, pinned like the rest.
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
