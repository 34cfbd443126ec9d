-- hookledger schema, version 20: one door into the database.
--
-- Until now the service's own credential owned every table, so "the ledger is append-only"
-- held against bugs, not against whoever held that credential: a setting switched the guard
-- off, triggers could be disabled, partitions dropped, `tx_id` chosen, a projection row written
-- behind an entry that said nothing. From this version on:
--
-- * every object belongs to the install's owner role (`<schema>_owner`, e.g. hookledger_owner),
--   which the migrator runs as (store/src/database-roles.ts creates the roles and grants);
-- * the service, the publisher and the console connect as roles that own nothing: they read
--   through SELECT and write only by calling the SECURITY DEFINER functions below, owned by the
--   owner role with `search_path` pinned. Inside, each function sets `tx_id` and `position`
--   itself (column defaults the callers cannot reach), validates what it is given, writes the
--   projections and appends the entries in one call;
-- * no setting changes what a guard does: the retention bypass is gone. Rows leave the ledger
--   only as whole partitions dropped by the retention function, which only the owner can run.
--
-- The row-level guard triggers that checked "a projection row needs an entry" per statement
-- (0012, 0019) leave the hot path: only hookledger_write can change a projection, and it checks
-- the rows against their entries itself, without probing the ledger's partitions.

drop trigger deliveries_insert_needs_ledger_entry on deliveries;
drop trigger deliveries_update_needs_ledger_entry on deliveries;
drop trigger deliveries_delete_needs_ledger_entry on deliveries;
drop trigger endpoints_insert_needs_ledger_entry on endpoints;
drop trigger endpoints_update_needs_ledger_entry on endpoints;
drop trigger endpoints_delete_needs_ledger_entry on endpoints;
drop function hookledger_deliveries_guard();
drop function hookledger_endpoints_guard();
drop function hookledger_guard_refuse(text, text, uuid, text);

-- Append-only, with no way around it. (Partitions leave by DROP inside the retention function.)
create or replace function hookledger_ledger_append_only() returns trigger
language plpgsql set search_path from current as $$
begin
  raise exception 'the ledger is append-only: % on % refused', tg_op, tg_table_name
    using errcode = 'insufficient_privilege',
          hint = 'ledger rows and checkpoints are never changed; sealed partitions leave only through hookledger_ledger_retention()';
end $$;

-- Snapshot rows of superseded snapshots may go, but only from inside the owner's prune function.
create or replace function hookledger_snapshot_rows_guard() returns trigger
language plpgsql set search_path from current as $$
begin
  if tg_op = 'DELETE' and current_user = (select c.relowner::regrole::text from pg_class c where c.oid = tg_relid) then
    return old;
  end if;
  raise exception 'snapshot rows are append-only: % refused', tg_op
    using errcode = 'insufficient_privilege',
          hint = 'superseded snapshot rows leave only through hookledger_ledger_snapshots_prune()';
end $$;
drop trigger ledger_snapshot_rows_append_only on ledger_snapshot_rows;
create trigger ledger_snapshot_rows_append_only
  before update or delete on ledger_snapshot_rows
  for each row execute function hookledger_snapshot_rows_guard();

-- The service may lock rows (`for update`, `for share`: PostgreSQL asks for an UPDATE
-- privilege on one column for that), never change them: every write to these tables comes
-- from a function running as their owner.
create function hookledger_refuse_direct_write() returns trigger
language plpgsql set search_path from current as $$
begin
  if current_user = (select c.relowner::regrole::text from pg_class c where c.oid = tg_relid) then
    return null;
  end if;
  raise exception '% on % refused: projections change only through hookledger_write()', tg_op, tg_table_name
    using errcode = 'insufficient_privilege';
end $$;
create trigger endpoints_one_door before insert or update or delete on endpoints
  for each statement execute function hookledger_refuse_direct_write();
create trigger deliveries_one_door before insert or update or delete on deliveries
  for each statement execute function hookledger_refuse_direct_write();
create trigger events_one_door before insert or update or delete on events
  for each statement execute function hookledger_refuse_direct_write();
create trigger access_codes_one_door before insert or update or delete on access_codes
  for each statement execute function hookledger_refuse_direct_write();
create trigger embeds_one_door before insert or update or delete on embeds
  for each statement execute function hookledger_refuse_direct_write();
create trigger api_tokens_one_door before insert or update or delete on api_tokens
  for each statement execute function hookledger_refuse_direct_write();
create trigger endpoint_queue_one_door before insert or update or delete on endpoint_queue
  for each statement execute function hookledger_refuse_direct_write();

-- An event is what was published: only `fanned_out_at` ever changes (the ledger's
-- `event.published` entry carries the SHA-256 of its data; replay and the attempt history
-- compare against it).
create function hookledger_events_immutable() returns trigger
language plpgsql set search_path from current as $$
begin
  if (new.owner_id, new.id, new.type, new.subject, new.occurred_at, new.published_at, new.data)
     is distinct from (old.owner_id, old.id, old.type, old.subject, old.occurred_at, old.published_at, old.data) then
    raise exception 'event %/% is immutable: only fanned_out_at may change', old.owner_id, old.id
      using errcode = 'insufficient_privilege';
  end if;
  return new;
end $$;
create trigger events_immutable before update on events
  for each row execute function hookledger_events_immutable();

-- The SHA-256 the ledger keeps of an event's data: of its jsonb text, which is the same for
-- equal values (keys ordered, no insignificant space).
create function hookledger_event_data_sha256(data jsonb) returns text
language sql immutable parallel safe set search_path from current as $$
  select encode(sha256(convert_to(data::text, 'UTF8')), 'hex')
$$;

create function hookledger_refuse(code text, message text) returns void
language plpgsql set search_path from current as $$
begin
  raise exception '%: %', code, message using errcode = 'integrity_constraint_violation', hint = code;
end $$;

-- What is wrong with one entry given to hookledger_write (null: nothing): an unknown kind, a
-- kind only another function appends, another owner's entry, or a payload without a field a
-- projection or a reader derives something from.
create function hookledger_entry_problem(e jsonb, p_owner text) returns text
language plpgsql immutable set search_path from current as $$
declare
  k text := e ->> 'kind';
  p jsonb := e -> 'payload';
  req text[];
  f text;
  t text;
begin
  if k is null or jsonb_typeof(p) is distinct from 'object' then return 'an entry needs a kind and an object payload'; end if;
  if e ->> 'owner_id' is null or e ->> 'actor' is null or e ->> 'occurred_at' is null then
    return k || ': owner_id, actor and occurred_at are required';
  end if;
  if p_owner <> '*' and e ->> 'owner_id' <> p_owner then
    return k || ': entry of owner ' || (e ->> 'owner_id') || ' in a write for ' || p_owner;
  end if;
  if k like 'endpoint.%' and e ->> 'endpoint_id' is null then return k || ': endpoint_id is required'; end if;
  if k like 'delivery.%' and (e ->> 'delivery_id' is null or e ->> 'endpoint_id' is null or e ->> 'event_id' is null) then
    return k || ': delivery_id, endpoint_id and event_id are required';
  end if;
  req := case k
    when 'fanout.decided'           then array['type:string', 'matched:array', 'denied:array']
    when 'endpoint.created'         then array['url:string', 'description:string', 'event_types:array', 'secret_sealed:string', 'secret_key_id:string']
    when 'endpoint.updated'         then array[]::text[]
    when 'endpoint.enabled'         then array[]::text[]
    when 'endpoint.disabled'        then array['reason:string']
    when 'endpoint.failing'         then array['since:string']
    when 'endpoint.recovered'       then array['failing_since:string']
    when 'endpoint.secret_rotated'  then array['secret_sealed:string', 'secret_key_id:string', 'previous_key_id:string']
    when 'endpoint.deleted'         then array[]::text[]
    when 'endpoint.purged'          then array['deleted_at:string']
    when 'delivery.enqueued'        then array['event_type:string', 'next_attempt_at:string', 'cool_down:boolean']
    when 'delivery.claimed'         then array['worker:string', 'lease_until:string']
    when 'delivery.lease_busy'      then array['next_attempt_at:string']
    when 'delivery.attempted'       then array['attempt:number', 'counted:boolean', 'run:number', 'started_at:string', 'duration_ms:number', 'outcome:string', 'signed_with:array']
    when 'delivery.completed'       then array[]::text[]
    when 'delivery.retry_scheduled' then array['next_attempt_at:string', 'backoff_ms:number']
    when 'delivery.snoozed'         then array['next_attempt_at:string', 'retry_after_ms:number']
    when 'delivery.discarded'       then array['reason:string']
    when 'delivery.settle_dropped'  then array['worker:string', 'claimed_by:string', 'outcome:string']
    when 'delivery.redelivered'     then array['run:number', 'next_attempt_at:string', 'previous_run:number', 'previous_attempts:number']
    when 'deliveries.retired'       then array['delivery_ids:array', 'count:number', 'cutoff:string']
    when 'token.issued'             then array['token_id:string', 'scopes:array', 'label:string']
    when 'token.revoked'            then array['token_id:string']
    when 'access_code.put'          then array['access_code_id:string', 'role_globs:array', 'deny_globs:array', 'reads_published_slice:boolean', 'created:boolean']
    when 'access_code.revoked'      then array['access_code_id:string']
    when 'embed.put'                then array['embed_id:string', 'access_code_id:string', 'created:boolean']
    when 'embed.deleted'            then array['embed_id:string']
    else null
  end;
  if req is null then
    if k in ('event.published', 'event.pruned', 'ledger.retention') then
      return k || ': appended only by its own function (publish, prune, retention), never by hookledger_write';
    end if;
    return k || ': unknown entry kind';
  end if;
  foreach f in array req loop
    t := split_part(f, ':', 2);
    f := split_part(f, ':', 1);
    if jsonb_typeof(p -> f) is distinct from t then
      return k || ': payload.' || f || ' must be a ' || t;
    end if;
  end loop;
  return null;
end $$;

-- The entries of a write as rows, in order (n).
create function hookledger_entries(p_entries jsonb)
returns table (n bigint, occurred_at timestamptz, owner_id text, kind text, endpoint_id uuid, delivery_id uuid,
               event_id text, payload jsonb, actor text)
language sql immutable set search_path from current as $$
  select x.n, r.occurred_at, r.owner_id, r.kind, r.endpoint_id, r.delivery_id, r.event_id, r.payload, r.actor
  from jsonb_array_elements(p_entries) with ordinality as x(entry, n)
  cross join lateral jsonb_to_record(x.entry)
    as r(occurred_at timestamptz, owner_id text, kind text, endpoint_id uuid, delivery_id uuid, event_id text, payload jsonb, actor text)
$$;

-- THE write primitive (store/src/ledger-write.ts computes the rows with core's evolve
-- functions and hands them here with their entries). In one call:
--   1. every entry is checked (hookledger_entry_problem), every row belongs to p_owner;
--   2. every projection row written has an entry about it in this call, its derived fields
--      agree with that entry, and a changed row is still the version the caller read;
--   3. the rows are written, the security projections (tokens, access codes, embeds) are
--      applied from their entries, events are marked fanned out where an entry decided them;
--   4. the entries are appended (tx_id and position from the column defaults);
--   5. the claim's queue heads of every endpoint the call touched are refreshed from their
--      definition (endpoint_queue_expected), in this later statement so they see step 3;
--   6. NOTIFY, sent on commit.
-- p_owner '*' is a write that spans owners (delivery retention). Returns {inserted: [ids]}.
create function hookledger_write(p_owner text, p_write jsonb) returns jsonb
language plpgsql security definer set search_path from current as $$
declare
  v_entries jsonb := coalesce(p_write -> 'entries', '[]');
  v_ep_created jsonb := coalesce(p_write #> '{endpoints,created}', '[]');
  v_ep_changed jsonb := coalesce(p_write #> '{endpoints,changed}', '[]');
  v_ep_removed uuid[] := coalesce((select array_agg(x::uuid) from jsonb_array_elements_text(p_write #> '{endpoints,removed}') x), '{}');
  v_dl_created jsonb := coalesce(p_write #> '{deliveries,created}', '[]');
  v_dl_changed jsonb := coalesce(p_write #> '{deliveries,changed}', '[]');
  v_dl_removed uuid[] := coalesce((select array_agg(x::uuid) from jsonb_array_elements_text(p_write #> '{deliveries,removed}') x), '{}');
  v_keep boolean := coalesce((p_write -> 'keep')::boolean, false);
  v_fanned jsonb := p_write -> 'fanned_out';
  v_inserted uuid[] := '{}';
  v_queue uuid[];
  v_bad text;
  v_channel text;
begin
  if p_owner is null then perform hookledger_refuse('owner_required', 'hookledger_write needs the owner as its first argument'); end if;

  -- 1. The entries.
  select hookledger_entry_problem(e, p_owner) into v_bad
  from jsonb_array_elements(v_entries) e where hookledger_entry_problem(e, p_owner) is not null limit 1;
  if v_bad is not null then perform hookledger_refuse('entry_invalid', v_bad); end if;

  -- 2. The rows against their entries.
  select coalesce(r ->> 'id', '?') into v_bad
  from jsonb_array_elements(v_ep_created || v_ep_changed || v_dl_created || v_dl_changed) r
  where p_owner <> '*' and r ->> 'owner_id' is distinct from p_owner limit 1;
  if v_bad is not null then perform hookledger_refuse('row_owner', format('row %s does not belong to owner %s', v_bad, p_owner)); end if;

  select d.id::text into v_bad
  from jsonb_populate_recordset(null::deliveries, v_dl_created || v_dl_changed) d
  where not exists (select 1 from hookledger_entries(v_entries) e where e.delivery_id = d.id) limit 1;
  if v_bad is not null then perform hookledger_refuse('row_without_entry', format('delivery %s written without an entry about it', v_bad)); end if;

  select d.id::text into v_bad
  from jsonb_populate_recordset(null::deliveries, v_dl_created) d
  where not exists (
    select 1 from hookledger_entries(v_entries) e
    where e.delivery_id = d.id and e.kind = 'delivery.enqueued'
      and e.endpoint_id = d.endpoint_id and e.event_id = d.event_id and e.payload ->> 'event_type' = d.event_type) limit 1;
  if v_bad is not null then perform hookledger_refuse('row_disagrees', format('delivery %s is not what its delivery.enqueued entry says', v_bad)); end if;

  select n.id::text into v_bad
  from jsonb_populate_recordset(null::endpoints, v_ep_created || v_ep_changed) n
  left join endpoints o on o.id = n.id
  where not exists (
    select 1 from hookledger_entries(v_entries) e
    where e.endpoint_id = n.id and (e.delivery_id is null or e.delivery_id = n.busy_delivery_id or e.delivery_id = o.busy_delivery_id)) limit 1;
  if v_bad is not null then perform hookledger_refuse('row_without_entry', format('endpoint %s written without an entry about it', v_bad)); end if;

  select n.id::text into v_bad
  from jsonb_populate_recordset(null::endpoints, v_ep_created) n
  where not exists (
    select 1 from hookledger_entries(v_entries) e
    where e.kind = 'endpoint.created' and e.endpoint_id = n.id and e.owner_id = n.owner_id
      and e.payload ->> 'url' = n.url and e.payload ->> 'description' = n.description
      and array(select jsonb_array_elements_text(e.payload -> 'event_types')) = n.event_types
      and decode(e.payload ->> 'secret_sealed', 'base64') = n.secret_sealed
      and e.payload ->> 'secret_key_id' = n.secret_key_id
      and (e.payload ->> 'embed_id') is not distinct from n.embed_id) limit 1;
  if v_bad is not null then perform hookledger_refuse('row_disagrees', format('endpoint %s is not what its endpoint.created entry says', v_bad)); end if;

  -- A changed endpoint's URL, event types and secret are the ones its latest entry set.
  select n.id::text into v_bad
  from jsonb_populate_recordset(null::endpoints, v_ep_changed) n
  join endpoints o on o.id = n.id
  where (n.url, n.event_types, n.secret_sealed, n.owner_id) is distinct from (o.url, o.event_types, o.secret_sealed, o.owner_id)
    and not exists (
      select 1 from hookledger_entries(v_entries) e
      where e.endpoint_id = n.id and e.kind in ('endpoint.updated', 'endpoint.secret_rotated')
        and n.owner_id = o.owner_id
        and (n.url = o.url or e.payload ->> 'url' = n.url)
        and (n.event_types = o.event_types or array(select jsonb_array_elements_text(e.payload -> 'event_types')) = n.event_types)
        and (n.secret_sealed = o.secret_sealed or decode(e.payload ->> 'secret_sealed', 'base64') = n.secret_sealed)) limit 1;
  if v_bad is not null then perform hookledger_refuse('row_disagrees', format('endpoint %s changed a field no entry of this write sets', v_bad)); end if;

  -- Row versions: a changed row must be the one the caller read (`_v`: its updated_at then).
  select coalesce(r ->> 'id', '?') into v_bad
  from jsonb_array_elements(v_dl_changed) r
  left join deliveries t on t.id = (r ->> 'id')::uuid
  where t.id is null or (r ? '_v' and t.updated_at is distinct from (r ->> '_v')::timestamptz) limit 1;
  if v_bad is not null then perform hookledger_refuse('row_version', format('delivery %s changed since it was read', v_bad)); end if;
  select coalesce(r ->> 'id', '?') into v_bad
  from jsonb_array_elements(v_ep_changed) r
  left join endpoints t on t.id = (r ->> 'id')::uuid
  where t.id is null or (r ? '_v' and t.updated_at is distinct from (r ->> '_v')::timestamptz) limit 1;
  if v_bad is not null then perform hookledger_refuse('row_version', format('endpoint %s changed since it was read', v_bad)); end if;

  select x::text into v_bad from unnest(v_dl_removed) x
  where not exists (select 1 from hookledger_entries(v_entries) e where e.kind = 'deliveries.retired' and e.payload -> 'delivery_ids' ? x::text) limit 1;
  if v_bad is not null then perform hookledger_refuse('row_without_entry', format('delivery %s removed without a deliveries.retired entry naming it', v_bad)); end if;
  select x::text into v_bad from unnest(v_ep_removed) x
  where not exists (select 1 from hookledger_entries(v_entries) e where e.kind = 'endpoint.purged' and e.endpoint_id = x and e.delivery_id is null) limit 1;
  if v_bad is not null then perform hookledger_refuse('row_without_entry', format('endpoint %s removed without its endpoint.purged entry', v_bad)); end if;

  -- 3. The rows.
  if jsonb_array_length(v_ep_created) > 0 then
    insert into endpoints select * from jsonb_populate_recordset(null::endpoints, v_ep_created);
  end if;
  if jsonb_array_length(v_ep_changed) > 0 then
    update endpoints t set (owner_id, url, description, event_types, embed_id, secret_sealed, secret_key_id,
        prev_secret_sealed, prev_secret_key_id, prev_secret_expires_at, enabled, disabled_reason, failing_since,
        busy_until, busy_delivery_id, deleted_at, created_at, updated_at, signature_scheme, v1a_key_sealed,
        v1a_public_key, prev_v1a_key_sealed, prev_v1a_public_key, prev_v1a_key_expires_at)
      = (r.owner_id, r.url, r.description, r.event_types, r.embed_id, r.secret_sealed, r.secret_key_id,
        r.prev_secret_sealed, r.prev_secret_key_id, r.prev_secret_expires_at, r.enabled, r.disabled_reason, r.failing_since,
        r.busy_until, r.busy_delivery_id, r.deleted_at, r.created_at, r.updated_at, r.signature_scheme, r.v1a_key_sealed,
        r.v1a_public_key, r.prev_v1a_key_sealed, r.prev_v1a_public_key, r.prev_v1a_key_expires_at)
    from jsonb_populate_recordset(null::endpoints, v_ep_changed) r
    where t.id = r.id;
  end if;
  if jsonb_array_length(v_dl_created) > 0 then
    if v_keep then
      with ins as (
        insert into deliveries select * from jsonb_populate_recordset(null::deliveries, v_dl_created)
        on conflict (id) do nothing returning id)
      select coalesce(array_agg(id), '{}') into v_inserted from ins;
    else
      with ins as (insert into deliveries select * from jsonb_populate_recordset(null::deliveries, v_dl_created) returning id)
      select coalesce(array_agg(id), '{}') into v_inserted from ins;
    end if;
  end if;
  if jsonb_array_length(v_dl_changed) > 0 then
    update deliveries t set (owner_id, endpoint_id, event_id, event_type, state, run, run_started_at, attempts,
        next_attempt_at, claimed_by, lease_until, last_status, last_error, created_at, updated_at, snoozes, snoozed_ms)
      = (r.owner_id, r.endpoint_id, r.event_id, r.event_type, r.state, r.run, r.run_started_at, r.attempts,
        r.next_attempt_at, r.claimed_by, r.lease_until, r.last_status, r.last_error, r.created_at, r.updated_at, r.snoozes, r.snoozed_ms)
    from jsonb_populate_recordset(null::deliveries, v_dl_changed) r
    where t.id = r.id;
  end if;
  if cardinality(v_dl_removed) > 0 then delete from deliveries where id = any(v_dl_removed); end if;
  if cardinality(v_ep_removed) > 0 then delete from endpoints where id = any(v_ep_removed); end if;

  -- Events decided by this write (fan-out, a test event): marked fanned out.
  if v_fanned is not null then
    select f.owner_id || '/' || f.id into v_bad from jsonb_to_recordset(v_fanned -> 'events') f(owner_id text, id text)
    where (p_owner <> '*' and f.owner_id <> p_owner)
       or not exists (select 1 from hookledger_entries(v_entries) e where e.owner_id = f.owner_id and e.event_id = f.id and e.kind in ('fanout.decided', 'delivery.enqueued')) limit 1;
    if v_bad is not null then perform hookledger_refuse('row_without_entry', format('event %s marked fanned out without its fanout.decided entry', v_bad)); end if;
    update events set fanned_out_at = (v_fanned ->> 'at')::timestamptz
    where (owner_id, id) in (select f.owner_id, f.id from jsonb_to_recordset(v_fanned -> 'events') f(owner_id text, id text));
  end if;

  -- The security projections, from their entries (the caller cannot write these rows at all).
  perform hookledger_security_apply(v_entries, p_write -> 'token_hashes');

  -- 4. The entries. With `keep`, an entry about a created delivery stays only if it was inserted.
  insert into ledger (occurred_at, owner_id, kind, endpoint_id, delivery_id, event_id, payload, actor)
  select e.occurred_at, e.owner_id, e.kind, e.endpoint_id, e.delivery_id, e.event_id, e.payload, e.actor
  from hookledger_entries(v_entries) e
  where not v_keep or e.delivery_id is null or e.delivery_id = any(v_inserted)
     or not exists (select 1 from jsonb_array_elements(v_dl_created) c where (c ->> 'id')::uuid = e.delivery_id)
  order by e.n;

  -- 5. Queue heads of the endpoints this write touched.
  select coalesce(array_agg(distinct x order by x), '{}') into v_queue from (
    select (r ->> 'endpoint_id')::uuid from jsonb_array_elements(v_dl_created || v_dl_changed) r
    union select (r ->> 'id')::uuid from jsonb_array_elements(v_ep_created || v_ep_changed) r
  ) s(x) where x is not null;
  if cardinality(v_queue) > 0 then
    if p_write ->> 'queue_merge' = 'earliest' then
      insert into endpoint_queue (endpoint_id, owner_id, ready_at)
      select x.endpoint_id, x.owner_id, x.ready_at from endpoint_queue_expected x
      where x.endpoint_id = any(v_queue) order by x.endpoint_id
      on conflict (endpoint_id) do update set ready_at = least(endpoint_queue.ready_at, excluded.ready_at)
      where endpoint_queue.ready_at is distinct from least(endpoint_queue.ready_at, excluded.ready_at);
    else
      insert into endpoint_queue (endpoint_id, owner_id, ready_at)
      select x.endpoint_id, x.owner_id, x.ready_at from endpoint_queue_expected x
      where x.endpoint_id = any(v_queue) order by x.endpoint_id
      on conflict (endpoint_id) do update set ready_at = excluded.ready_at
      where endpoint_queue.ready_at is distinct from excluded.ready_at;
    end if;
  end if;

  -- 6. NOTIFY on commit.
  if p_write ? 'notify' then
    v_channel := (case when p_write #>> '{notify,channel}' = 'events' then 'hookledger_events' else 'hookledger_deliveries' end)
      || (case when current_schema() = 'hookledger' then '' else '.' || current_schema() end);
    if p_write #>> '{notify,when}' is distinct from 'deliveries_inserted' or cardinality(v_inserted) > 0 then
      perform pg_notify(v_channel, '');
    end if;
  end if;
  return jsonb_build_object('inserted', to_jsonb(v_inserted));
end $$;

-- Tokens, access codes and embeds follow their entries.
-- A token's hash is never in the ledger: it comes beside the entry, keyed by token id.
create function hookledger_security_apply(p_entries jsonb, p_token_hashes jsonb) returns void
language plpgsql set search_path from current as $$
declare
  e record;
  n integer;
begin
  for e in select * from hookledger_entries(p_entries) w
           where w.kind in ('token.issued', 'token.revoked', 'access_code.put', 'access_code.revoked', 'embed.put', 'embed.deleted')
           order by w.n
  loop
    case e.kind
      when 'token.issued' then
        if p_token_hashes is null or p_token_hashes ->> (e.payload ->> 'token_id') is null then
          perform hookledger_refuse('token_hash_required', 'token.issued needs the token''s hash beside it');
        end if;
        insert into api_tokens (id, owner_id, scopes, token_hash, label, created_at, revoked_at)
        values ((e.payload ->> 'token_id')::uuid, e.owner_id, array(select jsonb_array_elements_text(e.payload -> 'scopes')),
                decode(p_token_hashes ->> (e.payload ->> 'token_id'), 'hex'), e.payload ->> 'label', e.occurred_at, null);
      when 'token.revoked' then
        update api_tokens set revoked_at = e.occurred_at
        where id = (e.payload ->> 'token_id')::uuid and owner_id = e.owner_id and revoked_at is null;
        get diagnostics n = row_count;
        if n = 0 then perform hookledger_refuse('token_not_live', format('token %s of %s is not live', e.payload ->> 'token_id', e.owner_id)); end if;
      when 'access_code.put' then
        insert into access_codes as c (owner_id, id, role_globs, deny_globs, reads_published_slice, expires_at, revoked_at, created_at, updated_at)
        values (e.owner_id, e.payload ->> 'access_code_id', array(select jsonb_array_elements_text(e.payload -> 'role_globs')),
                array(select jsonb_array_elements_text(e.payload -> 'deny_globs')), (e.payload ->> 'reads_published_slice')::boolean,
                (e.payload ->> 'expires_at')::timestamptz, null, e.occurred_at, e.occurred_at)
        on conflict (owner_id, id) do update set
          role_globs = excluded.role_globs, deny_globs = excluded.deny_globs,
          reads_published_slice = excluded.reads_published_slice, expires_at = excluded.expires_at,
          updated_at = excluded.updated_at
        where c.revoked_at is null and not (e.payload ->> 'created')::boolean;
        get diagnostics n = row_count;
        if n = 0 then perform hookledger_refuse('access_code_put', format('access code %s: created=%s does not match the table, or it is revoked', e.payload ->> 'access_code_id', e.payload ->> 'created')); end if;
      when 'access_code.revoked' then
        update access_codes set revoked_at = e.occurred_at, updated_at = e.occurred_at
        where owner_id = e.owner_id and id = e.payload ->> 'access_code_id' and revoked_at is null;
        get diagnostics n = row_count;
        if n = 0 then perform hookledger_refuse('access_code_not_live', format('access code %s is not live', e.payload ->> 'access_code_id')); end if;
      when 'embed.put' then
        perform 1 from access_codes where owner_id = e.owner_id and id = e.payload ->> 'access_code_id' and revoked_at is null for share;
        if not found then perform hookledger_refuse('access_code_not_live', format('access code %s is not live', e.payload ->> 'access_code_id')); end if;
        insert into embeds as m (owner_id, id, access_code_id, deleted_at, created_at, updated_at)
        values (e.owner_id, e.payload ->> 'embed_id', e.payload ->> 'access_code_id', null, e.occurred_at, e.occurred_at)
        on conflict (owner_id, id) do update set access_code_id = excluded.access_code_id, deleted_at = null, updated_at = excluded.updated_at
        where not (e.payload ->> 'created')::boolean;
        get diagnostics n = row_count;
        if n = 0 then perform hookledger_refuse('embed_put', format('embed %s: created=true but it exists', e.payload ->> 'embed_id')); end if;
      when 'embed.deleted' then
        update embeds set deleted_at = e.occurred_at, updated_at = e.occurred_at
        where owner_id = e.owner_id and id = e.payload ->> 'embed_id' and deleted_at is null;
        get diagnostics n = row_count;
        if n = 0 then perform hookledger_refuse('embed_not_live', format('embed %s is not live', e.payload ->> 'embed_id')); end if;
    end case;
  end loop;
end $$;

-- Publishing: the `events` rows of one owner and, for each one inserted, its `event.published`
-- entry with the SHA-256 of its data; NOTIFY on commit. The publisher role may call this and
-- nothing else. `p_events`: [{id, type, subject, occurred_at?, data}] in order; `p_now` null:
-- the statement's timestamp. Per input, [n, inserted, same content as stored (null: a stored
-- row this statement cannot see yet)].
create function hookledger_publish(p_owner text, p_events jsonb, p_now timestamptz, p_actor text) returns jsonb
language plpgsql security definer set search_path from current as $$
declare
  v_now timestamptz := coalesce(p_now, statement_timestamp());
  v_out jsonb;
  v_appended bigint;
begin
  if p_owner is null or p_owner = '' or p_owner = '*' then perform hookledger_refuse('owner_required', 'publish needs an owner'); end if;
  if p_actor is null then perform hookledger_refuse('actor_required', 'publish needs an actor'); end if;
  if exists (select 1 from jsonb_array_elements(p_events) e
             where e ->> 'id' is null or e ->> 'type' is null or e ->> 'subject' is null
                or jsonb_typeof(coalesce(e -> 'data', '{}')) <> 'object'
                or (e ? 'owner_id' and e ->> 'owner_id' <> p_owner)) then
    perform hookledger_refuse('event_invalid', 'each event needs id, type, subject and an object data, of this owner');
  end if;
  with input as (
    select x.n, r.id, r.type, r.subject, r.occurred_at, coalesce(r.data, '{}') as data
    from jsonb_array_elements(p_events) with ordinality as x(entry, n)
    cross join lateral jsonb_to_record(x.entry) as r(id text, type text, subject text, occurred_at timestamptz, data jsonb)
  ),
  inserted as (
    insert into events (owner_id, id, type, subject, occurred_at, published_at, data)
    select p_owner, i.id, i.type, i.subject, coalesce(i.occurred_at, v_now), v_now, i.data
    from input i order by i.n
    on conflict (owner_id, id) do nothing
    returning id
  ),
  appended as (
    insert into ledger (occurred_at, owner_id, kind, endpoint_id, delivery_id, event_id, payload, actor)
    select v_now, p_owner, 'event.published', null, null, i.id,
           jsonb_build_object('type', i.type, 'subject', i.subject, 'data_sha256', hookledger_event_data_sha256(i.data)), p_actor
    from input i join inserted e on e.id = i.id
    order by i.n
    returning 1
  )
  select coalesce((
      select jsonb_agg(jsonb_build_array(i.n, e.id is not null,
               case when ex.id is null then null
                    else ex.type = i.type and ex.subject = i.subject and ex.data = i.data
                         and (i.occurred_at is null or ex.occurred_at = i.occurred_at) end) order by i.n)
      from input i
      left join inserted e on e.id = i.id
      left join events ex on ex.owner_id = p_owner and ex.id = i.id), '[]'::jsonb),
    (select count(*) from appended)
  into v_out, v_appended;
  if v_appended > 0 then
    perform pg_notify('hookledger_events' || (case when current_schema() = 'hookledger' then '' else '.' || current_schema() end), '');
  end if;
  return v_out;
end $$;

-- For ids another transaction stored after hookledger_publish began: the same comparison, in
-- a call of its own (under READ COMMITTED it sees that transaction's rows). [n, same].
create function hookledger_publish_compare(p_owner text, p_events jsonb) returns jsonb
language sql stable security definer set search_path from current as $$
  select coalesce(jsonb_agg(jsonb_build_array(x.n,
           case when ex.id is null then null
                else ex.type = r.type and ex.subject = r.subject and ex.data = coalesce(r.data, '{}')
                     and (r.occurred_at is null or ex.occurred_at = r.occurred_at) end) order by x.n), '[]'::jsonb)
  from jsonb_array_elements(p_events) with ordinality as x(entry, n)
  cross join lateral jsonb_to_record(x.entry) as r(id text, type text, subject text, occurred_at timestamptz, data jsonb)
  left join events ex on ex.owner_id = p_owner and ex.id = r.id
$$;

-- Event retention: events published before `cutoff` leave `events`, a batch at a time, one
-- `event.pruned` entry each. Returns how many.
create function hookledger_events_prune(p_cutoff timestamptz, p_limit integer, p_now timestamptz) returns bigint
language plpgsql security definer set search_path from current as $$
declare
  n bigint;
begin
  with pruned as (
    delete from events where (owner_id, id) in (
      select owner_id, id from events where published_at < p_cutoff
      order by published_at limit p_limit for update skip locked
    ) returning owner_id, id, published_at
  ), appended as (
    insert into ledger (occurred_at, owner_id, kind, endpoint_id, delivery_id, event_id, payload, actor)
    select p_now, p.owner_id, 'event.pruned', null, null, p.id,
           jsonb_build_object('published_at', to_char(p.published_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')), 'system'
    from pruned p order by p.published_at, p.owner_id, p.id
    returning 1
  )
  select count(*) into n from appended;
  return n;
end $$;

-- Sealing: a checkpoint is appended only if it seals exactly the rows that follow the previous
-- one in chain order, all below the horizon of running transactions. The signature over it is
-- made by the sealer (the database holds no key) and checked by `ledger verify`.
create function hookledger_checkpoint_append(p jsonb) returns void
language plpgsql security definer set search_path from current as $$
declare
  c ledger_checkpoints;
  prev ledger_checkpoints;
  positions bigint[];
begin
  c := jsonb_populate_record(null::ledger_checkpoints, p);
  c.leaf_hashes := decode(p ->> 'leaf_hashes_hex', 'hex');
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
  insert into ledger_checkpoints values (c.*);
end $$;

-- The snapshot's cut: the next position to be drawn and the horizon, under an instant's SHARE
-- lock on the ledger (held to the end of the caller's transaction).
create function hookledger_snapshot_cut(p_lock_timeout_ms integer) returns table (before_position bigint, horizon xid8)
language plpgsql security definer set search_path from current as $$
declare
  seq text := pg_get_serial_sequence('ledger', 'position');
begin
  perform set_config('lock_timeout', p_lock_timeout_ms || 'ms', true);
  lock table ledger in share mode;
  return query execute format('select (select case when is_called then last_value + 1 else last_value end from %s), pg_snapshot_xmin(pg_current_snapshot())', seq);
end $$;

create function hookledger_snapshot_append(p jsonb) returns void
language plpgsql security definer set search_path from current as $$
declare
  s ledger_snapshots := jsonb_populate_record(null::ledger_snapshots, p);
begin
  if s.seq is distinct from (select coalesce(max(seq), 0) + 1 from ledger_snapshots) then
    perform hookledger_refuse('snapshot_seq', format('snapshot %s does not follow the latest', s.seq));
  end if;
  insert into ledger_snapshots values (s.*);
end $$;

-- Rows go only to the snapshot being taken (its header is appended last, in the same
-- transaction): never to one already recorded.
create function hookledger_snapshot_rows_append(p_seq bigint, p_chunks jsonb) returns void
language plpgsql security definer set search_path from current as $$
begin
  if p_seq is null or p_seq <= coalesce((select max(seq) from ledger_snapshots), 0) then
    perform hookledger_refuse('snapshot_closed', format('snapshot %s is already recorded: its rows are closed', p_seq));
  end if;
  insert into ledger_snapshot_rows (snapshot_seq, entity, chunk, rows)
  select p_seq, r.entity, r.chunk, r.rows from jsonb_to_recordset(p_chunks) as r(entity text, chunk integer, rows jsonb);
end $$;

create or replace function hookledger_ledger_snapshots_prune(keep_from_seq bigint)
returns bigint
language plpgsql security definer set search_path from current as $$
declare
  n bigint;
begin
  -- Only rows of snapshots older than the latest signed one.
  if keep_from_seq > coalesce((select max((c.snapshot ->> 'seq')::bigint) from ledger_checkpoints c where c.snapshot is not null), 0) then
    perform hookledger_refuse('snapshot_prune', 'only snapshots older than the latest signed one are pruned');
  end if;
  delete from ledger_snapshot_rows r where r.snapshot_seq < keep_from_seq;
  get diagnostics n = row_count;
  return n;
end $$;

alter function hookledger_ledger_retention(bigint, bigint, jsonb, text, timestamptz) security definer;
alter function hookledger_ledger_partitions_ahead(bigint, integer) security definer;

-- Replay finds each event's `event.published` entry, and rebuilds the security tables from
-- their few entries, through these instead of scanning the ledger.
create index ledger_event_published_idx on ledger (owner_id, event_id) where kind = 'event.published';
create index ledger_security_idx on ledger (kind, position)
  where kind in ('token.issued', 'token.revoked', 'access_code.put', 'access_code.revoked', 'embed.put', 'embed.deleted');

-- Every function of the install: pinned to its schema, with pg_temp searched last, so a
-- caller's temporary table can never stand in for one of ours inside a SECURITY DEFINER body.
do $$
declare
  fn record;
begin
  for fn in
    select p.oid::regprocedure as sig from pg_proc p
    join pg_namespace n on n.oid = p.pronamespace
    where n.nspname = current_schema() and p.proname like 'hookledger\_%'
  loop
    execute format('alter function %s set search_path = %I, pg_temp', fn.sig, current_schema());
  end loop;
end $$;
