-- 0020 a settle's batch updates its rows by position, not by a join of two unnests.
--
-- hookledger_write updated the changed delivery states, and the changed endpoints, from the
-- caller's patches joined by id to a second unnest of (id, version read). Both sets are
-- function scans the planner guesses at 10 rows, so it joined them with a nested loop: a batch of
-- n patches compared n² pairs. At the drain's batches (45 to 128 deliveries a call) that was most
-- of the statement: `npm run bench -- --only=drain --explain=3` showed 16,256 rows removed by the
-- join filter and ~5 of the update's 6.6 ms there, and `--stats` put the update at 3.4 ms a call,
-- first among the write's statements. The patches are already in the order of their versions
-- (v_dlx and v_epx are built `order by` the patch's position, one row a patch or refused), so
-- the version is read by position instead. Otherwise it is 0015's function, unchanged.

create or replace function hookledger_write(p_owner text, p_write jsonb) returns jsonb
language plpgsql security definer set search_path from current as $$
declare
  v_entries jsonb := coalesce(p_write -> 'entries', '[]');
  v_ep_created jsonb := coalesce(p_write #> '{endpoints,created}', '[]');
  v_ep_changed jsonb := coalesce(p_write #> '{endpoints,changed}', '[]');
  v_ep_removed uuid[] := '{}';
  v_dl_created jsonb := coalesce(p_write #> '{deliveries,created}', '[]');
  v_dl_changed jsonb := coalesce(p_write #> '{deliveries,changed}', '[]');
  v_dl_removed uuid[] := '{}';
  v_keep boolean := coalesce((p_write -> 'keep')::boolean, false);
  v_fanned jsonb := p_write -> 'fanned_out';
  v_inserted uuid[] := '{}';
  v_queue uuid[];
  v_bad text;
  v_channel text;
  -- Parsed once: the entries and the rows, typed.
  v_e hookledger_entry[];
  v_epc endpoints[] := '{}';
  v_epx endpoints[] := '{}';
  v_dlc deliveries[] := '{}';
  v_dlx deliveries[] := '{}';
  -- A changed row's version as the caller read it (its updated_at then), in the rows' order:
  -- checked by the update itself, which must then have written every one of them.
  v_epv timestamptz[] := '{}';
  v_dlv timestamptz[] := '{}';
  v_ids uuid[];
  -- The deliveries this write's entries enqueue: each `delivery.enqueued`, and those a format-3
  -- `fanout.decided` implies (one per matched endpoint, its id derived from the pair).
  v_enq hookledger_enqueue[] := '{}';
  v_n bigint;
  v_pids uuid[];
  -- Which parts this write has (plain expressions: no statement of their own).
  v_has_epc boolean := jsonb_array_length(v_ep_created) > 0;
  v_has_epx boolean := jsonb_array_length(v_ep_changed) > 0;
  v_has_dlc boolean := jsonb_array_length(v_dl_created) > 0;
  v_has_dlx boolean := jsonb_array_length(v_dl_changed) > 0;
  v_has_removed boolean := jsonb_array_length(coalesce(p_write #> '{endpoints,removed}', '[]')) + jsonb_array_length(coalesce(p_write #> '{deliveries,removed}', '[]')) > 0;
begin
  if p_owner is null then perform hookledger_refuse('owner_required', 'hookledger_write needs the owner as its first argument'); end if;

  -- 1. The entries.
  v_e := array(
    select row(x.n, r.occurred_at, r.owner_id, r.kind, r.endpoint_id, r.delivery_id, r.event_id, r.payload, r.actor)::hookledger_entry
    from jsonb_array_elements(v_entries) with ordinality as x(entry, n)
    cross join lateral jsonb_to_record(x.entry)
      as r(occurred_at timestamptz, owner_id text, kind text, endpoint_id uuid, delivery_id uuid, event_id text, payload jsonb, actor text)
    order by x.n);
  v_bad := hookledger_entries_problem(v_e, p_owner);
  if v_bad is not null then perform hookledger_refuse('entry_invalid', v_bad); end if;
  if v_has_epc then v_epc := array(select r from jsonb_populate_recordset(null::endpoints, v_ep_created) r); end if;
  if v_has_dlc then v_dlc := array(select r from jsonb_populate_recordset(null::deliveries, v_dl_created) r); end if;
  if v_has_removed then
    v_ep_removed := coalesce((select array_agg(x::uuid) from jsonb_array_elements_text(p_write #> '{endpoints,removed}') x), '{}');
    v_dl_removed := coalesce((select array_agg(x::uuid) from jsonb_array_elements_text(p_write #> '{deliveries,removed}') x), '{}');
  end if;
  -- A changed row comes as its id and the columns that changed, laid over the row as stored,
  -- which must still be the version the caller read. The stored rows are
  -- found through their id list, so by primary key whatever a generic plan's estimates.
  if v_has_epx then
    v_epv := array(select x::timestamptz from jsonb_array_elements_text(p_write #> '{endpoints,versions}') x);
    v_epx := array(
      select jsonb_populate_record(o, x.patch) from jsonb_array_elements(v_ep_changed) with ordinality as x(patch, n)
      join endpoints o on o.id = (x.patch ->> 'id')::uuid
      where o.id = any(array(select (p ->> 'id')::uuid from jsonb_array_elements(v_ep_changed) p))
        and o.updated_at = v_epv[x.n::integer] order by x.n);
  end if;
  if v_has_dlx then
  v_dlv := array(select x::timestamptz from jsonb_array_elements_text(p_write #> '{deliveries,versions}') x);
  v_pids := array(select (p ->> 'id')::uuid from jsonb_array_elements(v_dl_changed) p);
  -- The state row with the caller's patch laid over it. Its owner is its endpoint's (a delivery
  -- goes to an endpoint of its own owner, and neither's owner ever changes); the rest of its
  -- origin is left null, and read only for a patch that names it (below). So a settle reads no
  -- history: the origins, one row per delivery ever made, stay out of its way.
  v_dlx := array(
    select jsonb_populate_record(row(s.id,
        coalesce(ep.owner_id, (select o.owner_id from delivery_origins o where o.id = s.id)),
        s.endpoint_id, null, null, s.state, s.run,
        s.run_started_at, s.attempts, s.next_attempt_at, s.claimed_by, s.lease_until, s.last_status, s.last_error,
        null, s.updated_at, s.snoozes, s.snoozed_ms)::deliveries, x.patch)
    from jsonb_array_elements(v_dl_changed) with ordinality as x(patch, n)
    join delivery_states s on s.id = (x.patch ->> 'id')::uuid
    left join endpoints ep on ep.id = s.endpoint_id
    where s.id = any(v_pids) and s.updated_at = v_dlv[x.n::integer] order by x.n);
  end if;
  -- A row changed since the caller read it is refused here, before it is checked against the
  -- entries: a caller that wrote from a stale base learns it by this code alone. (The update in
  -- step 3 checks the version again, under the row lock.)
  if cardinality(v_epx) <> jsonb_array_length(v_ep_changed) or cardinality(v_dlx) <> jsonb_array_length(v_dl_changed) then
    perform hookledger_refuse('row_version', 'a changed row changed since it was read (or is gone, or is named twice)');
  end if;

  -- 2. The rows against their entries.
  if p_owner <> '*' and (v_has_epc or v_has_epx or v_has_dlc or v_has_dlx) then
    select x.id::text into v_bad from (
      select id, owner_id from unnest(v_epc || v_epx) union all select id, owner_id from unnest(v_dlc || v_dlx)
    ) x where x.owner_id is distinct from p_owner limit 1;
  end if;
  if v_bad is not null then perform hookledger_refuse('row_owner', format('row %s does not belong to owner %s', v_bad, p_owner)); end if;

  if v_has_dlc then
    -- An implied enqueue is never stored as one: the fold alone makes it (fanout-enqueues.ts).
    if exists (select 1 from unnest(v_e) e where e.kind = 'delivery.enqueued' and e.payload ? 'by_fanout') then
      perform hookledger_refuse('entry_invalid', 'a delivery.enqueued entry is never by_fanout: a fanout.decided entry implies those');
    end if;
    v_enq := array(
      select row(e.delivery_id, e.endpoint_id, e.event_id, e.owner_id, e.payload ->> 'event_type')::hookledger_enqueue from unnest(v_e) e
      where e.kind = 'delivery.enqueued' and e.delivery_id is not null and e.endpoint_id is not null
        and e.event_id is not null and e.payload ->> 'event_type' is not null
      union all
      select row(hookledger_delivery_id(m.id::uuid, e.event_id), m.id::uuid, e.event_id, e.owner_id, e.payload ->> 'type')::hookledger_enqueue
      from unnest(v_e) e cross join lateral jsonb_array_elements_text(e.payload -> 'matched') m(id)
      where e.kind = 'fanout.decided' and e.payload -> 'enqueues' = 'true' and e.event_id is not null and e.payload ->> 'type' is not null);
  end if;
  if v_has_dlc or v_has_dlx then
  select d.id::text into v_bad
  from unnest(v_dlc || v_dlx) d
  -- Set against set (a hashed NOT IN), so a fan-out of 20,000 rows costs 20,000 probes, not 20,000².
  where d.id not in (select e.delivery_id from unnest(v_e) e where e.delivery_id is not null union all select q.delivery_id from unnest(v_enq) q) limit 1;
  if v_bad is not null then perform hookledger_refuse('row_without_entry', format('delivery %s written without an entry about it', v_bad)); end if;
  end if;

  if v_has_dlc then
  select d.id::text into v_bad
  from unnest(v_dlc) d
  where (d.id, d.endpoint_id, d.event_id, d.owner_id, d.event_type) not in (
    select q.delivery_id, q.endpoint_id, q.event_id, q.owner_id, q.event_type from unnest(v_enq) q) limit 1;
  if v_bad is not null then perform hookledger_refuse('row_disagrees', format('delivery %s is not what the entry enqueuing it says', v_bad)); end if;
  -- A delivery belongs to its endpoint's owner (a changed delivery's owner is read off its
  -- endpoint, below): by primary key each, into a table that stays small and hot.
  select d.id::text into v_bad
  from unnest(v_dlc) d
  left join endpoints e on e.id = d.endpoint_id
  where e.owner_id is distinct from d.owner_id limit 1;
  if v_bad is not null then perform hookledger_refuse('row_owner', format('delivery %s is not of its endpoint''s owner', v_bad)); end if;
  end if;

  if v_has_epc or v_has_epx then
  select n.id::text into v_bad
  from unnest(v_epc || v_epx) n
  left join lateral (select o.busy_delivery_id from endpoints o where o.id = n.id) o on true
  where not exists (
    select 1 from unnest(v_e) e
    where e.endpoint_id = n.id and (e.delivery_id is null or e.delivery_id = n.busy_delivery_id or e.delivery_id = o.busy_delivery_id)) limit 1;
  if v_bad is not null then perform hookledger_refuse('row_without_entry', format('endpoint %s written without an entry about it', v_bad)); end if;
  end if;

  if v_has_epc then
  select n.id::text into v_bad
  from unnest(v_epc) n
  where not exists (
    select 1 from unnest(v_e) e
    where e.kind = 'endpoint.created' and e.endpoint_id = n.id and e.owner_id = n.owner_id
      and e.payload ->> 'url' = n.url and e.payload ->> 'description' = n.description
      and array(select jsonb_array_elements_text(e.payload -> 'event_types')) = n.event_types
      and decode(e.payload ->> 'secret_sealed', 'base64') = n.secret_sealed
      and e.payload ->> 'secret_key_id' = n.secret_key_id
      and (e.payload ->> 'embed_id') is not distinct from n.embed_id
      and coalesce(e.payload -> 'headers', '{}') = n.headers
      and coalesce(e.payload -> 'secret_headers_sealed', '{}') = n.secret_headers_sealed
      and coalesce(e.payload ->> 'follow_redirects', 'same_origin') = n.follow_redirects
      and nullif(e.payload -> 'rate_limit', 'null') is not distinct from n.rate_limit
      and coalesce(e.payload ->> 'ordering', 'none') = n.ordering
      and nullif(e.payload -> 'mtls', 'null') is not distinct from n.mtls
      and nullif(e.payload -> 'oauth2', 'null') is not distinct from n.oauth2) limit 1;
  if v_bad is not null then perform hookledger_refuse('row_disagrees', format('endpoint %s is not what its endpoint.created entry says', v_bad)); end if;
  end if;

  -- A changed endpoint's URL, event types, secret, custom headers, redirect rule, rate limit,
  -- ordering and authentication are the ones an entry of this write sets.
  if v_has_epx then
  select n.id::text into v_bad
  from unnest(v_epx) n
  join lateral (select o.url, o.event_types, o.secret_sealed, o.owner_id, o.headers, o.secret_headers_sealed, o.follow_redirects,
      o.rate_limit, o.ordering, o.mtls, o.oauth2
    from endpoints o where o.id = n.id) o on true
  where (n.url, n.event_types, n.secret_sealed, n.owner_id, n.headers, n.secret_headers_sealed, n.follow_redirects,
        n.rate_limit, n.ordering, n.mtls, n.oauth2)
      is distinct from (o.url, o.event_types, o.secret_sealed, o.owner_id, o.headers, o.secret_headers_sealed, o.follow_redirects,
        o.rate_limit, o.ordering, o.mtls, o.oauth2)
    and not exists (
      select 1 from unnest(v_e) e
      where e.endpoint_id = n.id and e.kind in ('endpoint.updated', 'endpoint.secret_rotated')
        and n.owner_id = o.owner_id
        and (n.url = o.url or e.payload ->> 'url' = n.url)
        and (n.event_types = o.event_types or array(select jsonb_array_elements_text(e.payload -> 'event_types')) = n.event_types)
        and (n.secret_sealed = o.secret_sealed or decode(e.payload ->> 'secret_sealed', 'base64') = n.secret_sealed)
        and (n.headers = o.headers or e.payload -> 'headers' = n.headers)
        and (n.secret_headers_sealed = o.secret_headers_sealed or e.payload -> 'secret_headers_sealed' = n.secret_headers_sealed)
        and (n.follow_redirects = o.follow_redirects or e.payload ->> 'follow_redirects' = n.follow_redirects)
        and (n.rate_limit is not distinct from o.rate_limit or (e.payload ? 'rate_limit' and nullif(e.payload -> 'rate_limit', 'null') is not distinct from n.rate_limit))
        and (n.ordering = o.ordering or e.payload ->> 'ordering' = n.ordering)
        and (n.mtls is not distinct from o.mtls or (e.payload ? 'mtls' and nullif(e.payload -> 'mtls', 'null') is not distinct from n.mtls))
        and (n.oauth2 is not distinct from o.oauth2 or (e.payload ? 'oauth2' and nullif(e.payload -> 'oauth2', 'null') is not distinct from n.oauth2))) limit 1;
  if v_bad is not null then perform hookledger_refuse('row_disagrees', format('endpoint %s changed a field no entry of this write sets', v_bad)); end if;
  end if;

  if v_has_removed then
  select x::text into v_bad from unnest(v_dl_removed) x
  where not exists (select 1 from unnest(v_e) e where e.kind = 'deliveries.retired' and e.payload -> 'delivery_ids' ? x::text) limit 1;
  if v_bad is not null then perform hookledger_refuse('row_without_entry', format('delivery %s removed without a deliveries.retired entry naming it', v_bad)); end if;
  select x::text into v_bad from unnest(v_ep_removed) x
  where not exists (select 1 from unnest(v_e) e where e.kind = 'endpoint.purged' and e.endpoint_id = x and e.delivery_id is null) limit 1;
  if v_bad is not null then perform hookledger_refuse('row_without_entry', format('endpoint %s removed without its endpoint.purged entry', v_bad)); end if;
  end if;

  -- 3. The rows.
  if jsonb_array_length(v_ep_created) > 0 then
    insert into endpoints select * from unnest(v_epc);
  end if;
  if jsonb_array_length(v_ep_changed) > 0 then
    v_ids := array(select x.id from unnest(v_epx) x);
    if cardinality(v_epv) <> cardinality(v_ids) then perform hookledger_refuse('row_version', 'every changed endpoint needs the version it was read at'); end if;
    update endpoints t set (owner_id, url, description, event_types, embed_id, secret_sealed, secret_key_id,
        prev_secret_sealed, prev_secret_key_id, prev_secret_expires_at, enabled, disabled_reason, failing_since,
        busy_until, busy_delivery_id, deleted_at, created_at, updated_at, signature_scheme, v1a_key_sealed,
        v1a_public_key, prev_v1a_key_sealed, prev_v1a_public_key, prev_v1a_key_expires_at,
        headers, secret_headers_sealed, follow_redirects, rate_limit, rate_tat, rate_adapted_per_second, ordering, mtls, oauth2)
      = (r.owner_id, r.url, r.description, r.event_types, r.embed_id, r.secret_sealed, r.secret_key_id,
        r.prev_secret_sealed, r.prev_secret_key_id, r.prev_secret_expires_at, r.enabled, r.disabled_reason, r.failing_since,
        r.busy_until, r.busy_delivery_id, r.deleted_at, r.created_at, r.updated_at, r.signature_scheme, r.v1a_key_sealed,
        r.v1a_public_key, r.prev_v1a_key_sealed, r.prev_v1a_public_key, r.prev_v1a_key_expires_at,
        r.headers, r.secret_headers_sealed, r.follow_redirects, r.rate_limit, r.rate_tat, r.rate_adapted_per_second,
        r.ordering, r.mtls, r.oauth2)
    from unnest(v_epx) with ordinality r
    where t.id = any(array(select unnest(v_ids))) and t.id = r.id and t.updated_at = v_epv[r.ordinality::integer];
    get diagnostics v_n = row_count;
    if v_n <> cardinality(v_epx) then
      perform hookledger_refuse('row_version', 'an endpoint changed since it was read (or is gone)');
    end if;
  end if;
  if jsonb_array_length(v_dl_created) > 0 then
    -- A delivery is two rows: what it is (delivery_origins, written once) and where it stands
    -- (delivery_states, the narrow row every claim and settle rewrites).
    if v_keep then
      with ins as (
        insert into delivery_origins (id, owner_id, endpoint_id, event_id, event_type, created_at)
        select c.id, c.owner_id, c.endpoint_id, c.event_id, c.event_type, c.created_at from unnest(v_dlc) c
        on conflict (id) do nothing returning id)
      select coalesce(array_agg(id), '{}') into v_inserted from ins;
    else
      with ins as (
        insert into delivery_origins (id, owner_id, endpoint_id, event_id, event_type, created_at)
        select c.id, c.owner_id, c.endpoint_id, c.event_id, c.event_type, c.created_at from unnest(v_dlc) c returning id)
      select coalesce(array_agg(id), '{}') into v_inserted from ins;
    end if;
    insert into delivery_states (id, endpoint_id, state, run, run_started_at, attempts, next_attempt_at, claimed_by,
        lease_until, last_status, last_error, updated_at, snoozes, snoozed_ms)
    select c.id, c.endpoint_id, c.state, c.run, c.run_started_at, c.attempts, c.next_attempt_at, c.claimed_by,
        c.lease_until, c.last_status, c.last_error, c.updated_at, c.snoozes, c.snoozed_ms
    from unnest(v_dlc) c
    where not v_keep or c.id = any(v_inserted);
  end if;
  if jsonb_array_length(v_dl_changed) > 0 then
    v_ids := array(select x.id from unnest(v_dlx) x);
    if cardinality(v_dlv) <> cardinality(v_ids) then perform hookledger_refuse('row_version', 'every changed delivery needs the version it was read at'); end if;
    -- What a delivery is never changes: a changed row must say what its origin says (the owner
    -- check above read the caller's copy, so this is also what keeps it to its own owner).
    -- (A row is its origin with its patch laid over: only a patch naming one of these can.)
    select r.id::text into v_bad from unnest(v_dlx) r left join delivery_origins o on o.id = r.id
    where r.id = any(array(select (p ->> 'id')::uuid from jsonb_array_elements(v_dl_changed) p
                           where p ?| array['owner_id', 'endpoint_id', 'event_id', 'event_type', 'created_at']))
      and (r.owner_id, r.endpoint_id, r.event_id, r.event_type, r.created_at)
      is distinct from (o.owner_id, o.endpoint_id, o.event_id, o.event_type, o.created_at) limit 1;
    if v_bad is not null then perform hookledger_refuse('row_disagrees', format('delivery %s changed what it is (owner, endpoint, event or creation), or is gone', v_bad)); end if;
    -- Only the narrow state row is rewritten.
    update delivery_states t set (state, run, run_started_at, attempts, next_attempt_at, claimed_by, lease_until,
        last_status, last_error, updated_at, snoozes, snoozed_ms)
      = (r.state, r.run, r.run_started_at, r.attempts, r.next_attempt_at, r.claimed_by, r.lease_until,
        r.last_status, r.last_error, r.updated_at, r.snoozes, r.snoozed_ms)
    -- Each patch's version by its position (v_dlx is in the order of the versions): joining a
    -- second unnest by id made a nested loop over both, quadratic in the batch.
    from unnest(v_dlx) with ordinality r
    -- The id list gives the planner the primary key's path whatever its estimates.
    where t.id = any(array(select unnest(v_ids))) and t.id = r.id and t.updated_at = v_dlv[r.ordinality::integer];
    get diagnostics v_n = row_count;
    if v_n <> cardinality(v_dlx) then
      perform hookledger_refuse('row_version', 'a delivery changed since it was read (or is gone)');
    end if;
  end if;
  if cardinality(v_dl_removed) > 0 then
    delete from delivery_states where id = any(v_dl_removed);
    delete from delivery_origins where id = any(v_dl_removed);
  end if;
  if cardinality(v_ep_removed) > 0 then delete from endpoints where id = any(v_ep_removed); end if;

  -- Events decided by this write (fan-out, a test event): marked fanned out.
  if v_fanned is not null then
    select f.owner_id || '/' || f.id into v_bad from jsonb_to_recordset(v_fanned -> 'events') f(owner_id text, id text)
    where (p_owner <> '*' and f.owner_id <> p_owner)
       or (f.owner_id, f.id) not in (select e.owner_id, e.event_id from unnest(v_e) e where e.kind in ('fanout.decided', 'delivery.enqueued') and e.event_id is not null) limit 1;
    if v_bad is not null then perform hookledger_refuse('row_without_entry', format('event %s marked fanned out without its fanout.decided entry', v_bad)); end if;
    -- The key lists lead the planner to the primary key (a generic plan joined the list to a
    -- scan of every event ever published).
    update events set fanned_out_at = (v_fanned ->> 'at')::timestamptz
    where owner_id = any(array(select f ->> 'owner_id' from jsonb_array_elements(v_fanned -> 'events') f))
      and id = any(array(select f ->> 'id' from jsonb_array_elements(v_fanned -> 'events') f))
      and (owner_id, id) in (select f.owner_id, f.id from jsonb_to_recordset(v_fanned -> 'events') f(owner_id text, id text));
  end if;

  -- The security projections, from their entries (the caller cannot write these rows at all).
  -- None of theirs is about a delivery, an endpoint or a fan-out: a write of only those (every
  -- claim, settle and fan-out) skips the five functions' look.
  if jsonb_path_exists(v_entries, '$[*] ? (!(@.kind like_regex "^(delivery|deliveries|endpoint|fanout)[.]"))') then
    perform hookledger_security_apply(v_e, p_write -> 'token_hashes');
  end if;

  -- 4. The entries. With `keep`, an entry about a created delivery stays only if it was inserted.
  insert into ledger (occurred_at, owner_id, kind, endpoint_id, delivery_id, event_id, payload, actor)
  select e.occurred_at, e.owner_id, e.kind, e.endpoint_id, e.delivery_id, e.event_id, e.payload, e.actor
  from unnest(v_e) e
  where not v_keep or e.delivery_id is null or e.delivery_id in (select unnest(v_inserted))
     or e.delivery_id not in (select c.id from unnest(v_dlc) c)
  order by e.n;

  -- 5. Queue heads of the endpoints this write touched.
  if v_has_epc or v_has_epx or v_has_dlc or v_has_dlx then
  select coalesce(array_agg(distinct x order by x), '{}') into v_queue from (
    select r.endpoint_id from unnest(v_dlc || v_dlx) r
    union select r.id from unnest(v_epc || v_epx) r
  ) s(x) where x is not null;
  end if;
  if cardinality(v_queue) > 0 then
    if p_write ->> 'queue_merge' = 'earliest' then
      -- A fan-out's: shared locks on the endpoints first, so the heads below see any claim or
      -- settle of theirs that committed first (taken here, not in a statement of the caller's).
      perform 1 from endpoints where id = any(v_queue) order by id for share;
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

-- As the baseline ends: the function this migration replaced, pinned like the rest.
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
