-- 0018 the API takes an owner's publish limit in a transaction of its own; a changed limit
-- starts a full bucket.
--
-- hookledger_publish (0009) advances a limited owner's bucket (`publish_tat`) in the publish's
-- own transaction, so the owner's row stays locked until that transaction commits, and the
-- owner's next publish waits for the commit's WAL flush: through the API, at 16 requests in
-- flight, a limit never reached cost 0.22 of the owner's publish rate (the bench's
-- `owner-limits`), and on a disk with a slower flush the limit would be the flush, not the rate.
--
-- The service now admits a publish first, in a statement of its own whose commit does not wait
-- for the flush (the bucket is state, not history: a crash forgets at most the last few
-- milliseconds of it), then publishes with hookledger_publish_admitted, which checks suspension
-- again but not the bucket. Only the service's role may call the two (database-roles.ts): an
-- application's publisher still goes through hookledger_publish, limit and publish in one
-- transaction, refused before anything is written.
--
-- The limit's rule is one function, hookledger_owner_admit, which both ways call (granted to no
-- login role: `hookledger migrate` revokes every function from PUBLIC and grants by name).

create function hookledger_owner_admit(p_owner text, p_cost integer, p_now timestamptz) returns jsonb
language plpgsql as $$
declare
  v_now timestamptz := coalesce(p_now, statement_timestamp());
  o owners;
  v_period interval;
  v_burst integer;
  v_tat timestamptz;
begin
  select * into o from owners where id = p_owner;
  if not found then
    return null;
  end if;
  if o.suspended_at is not null then
    return jsonb_build_object('refused', 'owner_suspended', 'suspended_at', o.suspended_at, 'reason', o.suspended_reason);
  end if;
  if o.publish_per_second is null then
    return null;
  end if;
  -- GCRA: each event costs one period; admitted while the bucket's arrival time stays within
  -- `burst` periods of now. A batch larger than the burst is admitted on an empty bucket and
  -- pays its whole cost (the next publishes wait it out), so the long-run rate holds.
  v_period := make_interval(secs => 1.0 / o.publish_per_second);
  v_burst := coalesce(o.publish_burst, greatest(1, ceil(o.publish_per_second)::integer));
  update owners set publish_tat = greatest(coalesce(publish_tat, v_now), v_now) + v_period * p_cost
  where id = p_owner
    and greatest(coalesce(publish_tat, v_now), v_now) + v_period * least(p_cost, v_burst) <= v_now + v_period * v_burst
    and suspended_at is null;
  if found then
    return null;
  end if;
  select * into o from owners where id = p_owner;
  if o.suspended_at is not null then
    return jsonb_build_object('refused', 'owner_suspended', 'suspended_at', o.suspended_at, 'reason', o.suspended_reason);
  end if;
  v_tat := greatest(coalesce(o.publish_tat, v_now), v_now) + v_period * least(p_cost, v_burst) - v_period * v_burst;
  return jsonb_build_object('refused', 'owner_rate_limited', 'retry_at', v_tat,
    'publish_per_second', o.publish_per_second, 'publish_burst', v_burst);
end $$;

-- An application's publish: the limit, then the publish, in the caller's transaction (as 0009).
create or replace function hookledger_publish(p_owner text, p_events jsonb, p_now timestamptz, p_actor text) returns jsonb
language plpgsql security definer set search_path from current as $$
declare
  v_refusal jsonb := hookledger_owner_admit(p_owner, jsonb_array_length(p_events), p_now);
begin
  if v_refusal is not null then
    return v_refusal;
  end if;
  return hookledger_publish_internal(p_owner, p_events, p_now, p_actor);
end $$;

-- The service's admission: null (admitted, the bucket advanced) or the refusal. Its own
-- statement (autocommit): the row lock is held for the statement, and the commit does not wait
-- for the WAL flush.
create function hookledger_publish_admit(p_owner text, p_cost integer, p_now timestamptz) returns jsonb
language plpgsql security definer set search_path from current as $$
begin
  if p_cost < 1 then
    raise exception 'a publish costs at least one event' using errcode = '22023';
  end if;
  perform set_config('synchronous_commit', 'off', true);
  return hookledger_owner_admit(p_owner, p_cost, p_now);
end $$;

-- The service's publish after its admission: a suspension since is still refused.
create function hookledger_publish_admitted(p_owner text, p_events jsonb, p_now timestamptz, p_actor text) returns jsonb
language plpgsql security definer set search_path from current as $$
declare
  o owners;
begin
  select * into o from owners where id = p_owner;
  if found and o.suspended_at is not null then
    return jsonb_build_object('refused', 'owner_suspended', 'suspended_at', o.suspended_at, 'reason', o.suspended_reason);
  end if;
  return hookledger_publish_internal(p_owner, p_events, p_now, p_actor);
end $$;

-- A changed publish limit starts a full bucket, as an endpoint's rate limit does: the bucket's
-- time was counted in the old limit's periods (an owner at one event a minute raised to a
-- hundred a second was refused until the old schedule caught up, a minute on). As 0009
-- otherwise; publish_tat is state, not history, so replay does not compare it.
create or replace function hookledger_owners_apply(p_entries hookledger_entry[]) returns void
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
          publish_tat = case when l ? 'publish_per_second' or l ? 'publish_burst' then null else publish_tat end,
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

-- Pinned as every SECURITY DEFINER function is (the baseline's last step): pg_temp last.
do $$
begin
  execute format('alter function hookledger_owner_admit(text, integer, timestamptz) set search_path = %I, pg_temp', current_schema());
  execute format('alter function hookledger_publish(text, jsonb, timestamptz, text) set search_path = %I, pg_temp', current_schema());
  execute format('alter function hookledger_publish_admit(text, integer, timestamptz) set search_path = %I, pg_temp', current_schema());
  execute format('alter function hookledger_publish_admitted(text, jsonb, timestamptz, text) set search_path = %I, pg_temp', current_schema());
end $$;
