-- hookledger schema: the baseline.
--
-- The whole schema of a fresh install, created directly in its final form. It replaces the
-- migrations 0001–0020 written while the product was built (no deployment ran them): the same
-- tables, indexes, views, functions and triggers they left behind, without their upgrade paths
-- (no copying of an existing ledger into a first partition, no backfills, no renames, no move
-- out of `public`). From here on migrations are frozen: this file never changes once merged,
-- and every later change to the schema is a new numbered file (0002_…) after it.
--
-- Everything is created in `current_schema()`: the migrator's connections run with
-- `search_path` set to the configured schema alone (store/src/db-handle.ts), it created that
-- schema first, and it runs this file as the install's owner role (store/src/database-roles.ts
-- creates the roles and applies the grants), so every object below belongs to the owner.
--
-- The rules the database holds (docs/ledger.md):
--
-- * The ledger is the truth. It is append-only: UPDATE, DELETE and TRUNCATE raise on it, on
--   every partition, on the checkpoints and on the snapshots; no setting switches that off.
--   Rows leave only as whole sealed partitions, dropped by the audited retention function.
-- * The ledger is range-partitioned by position, so that sealed history leaves a partition at a
--   time (DROP: instant, no dead tuples) and no index or vacuum covers all time. Partitions are
--   created ahead of the writers (`hookledger_ledger_partitions_ahead`, run by every worker's
--   maintenance); a default partition catches rows should the writers ever outrun them.
-- * Chain order is (tx_id, position): a transaction takes its xid at its first write, so
--   positions alone can commit out of order; below the oldest running transaction
--   (tx_id, position) order is final. The sealer and readers follow it (ledger_chain_order_idx).
-- * One door: the service, the publisher and the console connect as roles that own nothing.
--   They read through SELECT and write only by calling the SECURITY DEFINER functions below,
--   owned by the owner role with `search_path` pinned. Inside, each function sets `tx_id` and
--   `position` itself (column defaults the callers cannot reach), validates what it is given,
--   writes the projections (endpoints, deliveries and the claim's queue heads) and appends their
--   entries in one call; a direct write to a projection table is refused.

-- ---------------------------------------------------------------------------------------------
-- The ledger
-- ---------------------------------------------------------------------------------------------

-- Every table carries owner_id so the data can later be distributed by owner.
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

-- Per-endpoint audit reads: endpoint entries without a delivery.
create index ledger_endpoint_idx on ledger (endpoint_id, position) where endpoint_id is not null and delivery_id is null;
-- One delivery's history. Keyed on delivery_id alone, btree deduplication stores a delivery's
-- four-plus entries as one key with a posting list (about 60% less index per delivery than
-- (delivery_id, position)); readers sort its few rows by position.
create index ledger_delivery_id_idx on ledger (delivery_id) where delivery_id is not null;
-- Chain order (see above): the sealer and the readers walk this, one range scan per partition.
create index ledger_chain_order_idx on ledger (tx_id, position);
-- Replay expands each retirement into one entry per delivery it names; this finds them without
-- reading the whole ledger.
create index ledger_retired_idx on ledger (position) where kind = 'deliveries.retired';
-- `events.explain` reads an event's `event.published` and `fanout.decided` entries by event id.
-- Partial: two rows per event, not every entry that names one.
create index ledger_event_decisions_idx on ledger (event_id)
  where kind in ('event.published', 'fanout.decided');
-- Endpoint health (`webhooks.stats`) reads one endpoint's attempts of a window (24 h or 7 d) by
-- when they were recorded: one range scan per ledger partition, and a busy neighbour's attempts
-- are never walked.
create index ledger_endpoint_attempts_idx on ledger (endpoint_id, occurred_at)
  where kind = 'delivery.attempted';
-- The archive's record: the retention entries are read by every verification (which
-- checkpoints' rows were dropped, and where the chain resumes).
create index ledger_retention_idx on ledger (position) where kind = 'ledger.retention';
-- Replay finds each event's `event.published` entry, and rebuilds the security tables from
-- their few entries, through these instead of scanning the ledger.
create index ledger_event_published_idx on ledger (owner_id, event_id) where kind = 'event.published';
create index ledger_security_idx on ledger (kind, position)
  where kind in ('token.issued', 'token.revoked', 'access_code.put', 'access_code.revoked', 'embed.put', 'embed.deleted');

-- Rows past the partitions made ahead land here; the next partition then starts above them.
create table ledger_p_default partition of ledger default;

-- Signed checkpoints over the ledger's hash chain. A sealer follows the ledger in chain order
-- below the oldest running transaction, so it never serializes the writers on a "previous
-- hash". Each checkpoint seals the rows after the previous one: their positions and leaf
-- hashes (in chain order), the Merkle root over those leaves, the chain head
-- SHA-256(prev ‖ row) after its last row, the running row count, and the hash of the previous
-- checkpoint, all signed with Ed25519 (the key never enters the database). Position gaps
-- (rolled-back inserts) are simply absent: the sealed list of positions is the truth.
create table ledger_checkpoints (
  seq                  bigint primary key,
  first_tx_id          xid8,
  first_position       bigint,
  last_tx_id           xid8,
  last_position        bigint,
  count                bigint not null,
  total                bigint not null,
  chain_hash           text not null,
  merkle_root          text not null,
  prev_checkpoint_hash text not null,
  created_at           text not null,      -- exactly as signed (ISO-8601)
  key_id               text not null,
  signature            text not null,
  -- The sealed rows, in chain order: positions, and 32-byte leaf hashes concatenated.
  leaf_positions       bigint[] not null,
  leaf_hashes          bytea not null,
  -- The signed descriptor {seq, before_position, horizon, digest, endpoints, deliveries} of the
  -- projection snapshot a checkpoint carries; null for most checkpoints.
  snapshot             jsonb,
  constraint ledger_checkpoints_leaves check (octet_length(leaf_hashes) = 32 * count and cardinality(leaf_positions) = count)
);
-- A row's checkpoint: the first whose last row is at or after it.
create index ledger_checkpoints_last_idx on ledger_checkpoints (last_tx_id, last_position);
create unique index ledger_checkpoints_snapshot_idx on ledger_checkpoints (((snapshot ->> 'seq')::bigint))
  where snapshot is not null;

-- Projection snapshots: the fold of every ledger entry below a position P into the projections
-- (endpoints and deliveries), stored beside the ledger and summarised by a SHA-256 digest. P is
-- cut under a brief SHARE lock on the ledger, so every row below it is committed and a
-- transaction's rows never straddle it (docs/ledger.md §7). The first checkpoint that seals
-- every row below P carries the snapshot's descriptor in its signed message; replay and
-- `ledger verify` then start from the snapshot and read only the entries at or after P.
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

-- ---------------------------------------------------------------------------------------------
-- Events, endpoints, deliveries: the outbox and the projections of the ledger
-- ---------------------------------------------------------------------------------------------

-- Events are the publisher's outbox: written by publish, fanned out once by a worker.
create table events (
  owner_id      text not null,
  id            text not null,
  type          text not null,
  subject       text not null,
  occurred_at   timestamptz not null,
  published_at  timestamptz not null,
  data          jsonb not null default '{}'::jsonb,
  fanned_out_at timestamptz,
  primary key (owner_id, id)
);
create index events_fanout_idx on events (published_at) where fanned_out_at is null;
create index events_retention_idx on events (published_at);

-- An endpoint signs with its HMAC secret (`v1`), its ed25519 key pair (`v1a`, Standard
-- Webhooks), or both. The private key (`whsk_…`) is sealed with the master key like the
-- secret; the public key (`whpk_…`) is public by design and stored as issued. The previous
-- secret and key pair keep signing until their expiry after a rotation.
create table endpoints (
  id                   uuid primary key,
  owner_id             text not null,
  url                  text not null,
  description          text not null default '',
  event_types          text[] not null,
  embed_id             text,
  secret_sealed        bytea not null,
  secret_key_id        text not null,
  prev_secret_sealed   bytea,
  prev_secret_key_id   text,
  prev_secret_expires_at timestamptz,
  enabled              boolean not null,
  disabled_reason      text,
  failing_since        timestamptz,
  busy_until           timestamptz,
  busy_delivery_id     uuid,
  deleted_at           timestamptz,
  created_at           timestamptz not null,
  updated_at           timestamptz not null,
  signature_scheme        text not null default 'v1'
    constraint endpoints_signature_scheme_known check (signature_scheme in ('v1', 'v1a', 'v1+v1a')),
  v1a_key_sealed          bytea,
  v1a_public_key          text,
  prev_v1a_key_sealed     bytea,
  prev_v1a_public_key     text,
  prev_v1a_key_expires_at timestamptz,
  -- A scheme that signs v1a always has a key pair to sign with.
  constraint endpoints_v1a_key_present
    check (signature_scheme = 'v1' or (v1a_key_sealed is not null and v1a_public_key is not null))
);
create index endpoints_owner_idx on endpoints (owner_id, created_at, id) where deleted_at is null;
-- The purge looks at deleted endpoints only.
create index endpoints_deleted_idx on endpoints (deleted_at) where deleted_at is not null;
alter table endpoints set (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 50);

-- A delivery's id is derived from its (endpoint, event) pair (core `deliveryIdFor`), so the
-- primary key enforces "one delivery per endpoint and event" and fan-out inserts with
-- `on conflict (id) do nothing`: no second unique index on the hottest table.
create table deliveries (
  id               uuid primary key,
  owner_id         text not null,
  endpoint_id      uuid not null,
  event_id         text not null,
  event_type       text not null,
  state            text not null,
  run              integer not null,
  run_started_at   timestamptz not null,
  attempts         integer not null,
  next_attempt_at  timestamptz,
  claimed_by       text,
  lease_until      timestamptz,
  last_status      integer,
  last_error       text,
  created_at       timestamptz not null,
  updated_at       timestamptz not null,
  -- The snooze budget: how many Retry-After snoozes the current run has taken, and their total
  -- delay. The worker stops honouring Retry-After for free once either passes its setting
  -- (HOOKLEDGER_SNOOZE_MAX_COUNT / HOOKLEDGER_SNOOZE_MAX_HOURS).
  snoozes          integer not null default 0,
  snoozed_ms       integer not null default 0,
  constraint deliveries_state_check
    check (state in ('pending', 'running', 'retryable', 'completed', 'discarded')),
  constraint deliveries_attempt_within_max check (attempts between 0 and 18),
  constraint deliveries_waiting_has_next_attempt
    check (state not in ('pending', 'retryable') or next_attempt_at is not null),
  constraint deliveries_running_has_lease
    check (state <> 'running' or (claimed_by is not null and lease_until is not null))
);
-- The claim probes each leasable endpoint for its earliest waiting delivery. Completed and
-- discarded rows are outside the index, so the claim's cost does not grow with history, and a
-- busy endpoint's backlog is never scanned.
create index deliveries_claim_idx on deliveries (endpoint_id, next_attempt_at, id)
  where state in ('pending', 'retryable');
-- The rescuer: running rows past their lease.
create index deliveries_running_idx on deliveries (lease_until) where state = 'running';
create index deliveries_endpoint_list_idx on deliveries (endpoint_id, created_at desc, id desc);
-- Retention takes the oldest settled rows first. Only settled rows are in this index (a row
-- enters it when it completes or is discarded, and leaves it when retired or redelivered).
create index deliveries_settled_idx on deliveries (updated_at) where state in ('completed', 'discarded');
-- The owner's delivery log across endpoints (`deliveries.list`), newest first: one range scan
-- of this index per page, (owner_id) equal, (created_at, id) below the cursor and within
-- since/until, the other filters checked on the rows it walks. An endpoint filter uses
-- deliveries_endpoint_list_idx instead.
create index deliveries_owner_log_idx on deliveries (owner_id, created_at desc, id desc);
-- With an event type named, this one: a rare type would otherwise walk (or seq-scan) the whole
-- owner's log to fill a page.
create index deliveries_owner_type_log_idx on deliveries (owner_id, event_type, created_at desc, id desc);
alter table deliveries set (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 200);

-- The claim's queue head: per endpoint, when it can next be claimed. The claim reads only
-- endpoints whose ready_at has come, through a partial index: its cost follows the due work,
-- not the number of endpoints.
--
-- ready_at is null when the endpoint has no waiting (pending/retryable) delivery; otherwise the
-- earliest next_attempt_at among them, pushed back to the end of the endpoint's lease while an
-- enabled endpoint is leased. A disabled or deleted endpoint with waiting deliveries stays ready
-- (the claim discards them); one without leaves the claim path for good.
--
-- A derived index of the projections, not a projection of its own: the write primitive
-- (hookledger_write) refreshes the rows of every endpoint a write touches, in the same call,
-- from this one definition; `ledger replay --verify` checks it against it.
create view endpoint_queue_expected as
select e.id as endpoint_id, e.owner_id,
  case
    when h.due is null then null
    when e.enabled and e.deleted_at is null and e.busy_until is not null then greatest(h.due, e.busy_until)
    else h.due
  end as ready_at
from endpoints e
cross join lateral (
  select min(d.next_attempt_at) as due from deliveries d
  where d.endpoint_id = e.id and d.state in ('pending', 'retryable')
) h;

create table endpoint_queue (
  endpoint_id uuid primary key references endpoints (id) on delete cascade,
  owner_id    text not null,
  ready_at    timestamptz
);
create index endpoint_queue_ready_idx on endpoint_queue (ready_at, endpoint_id) where ready_at is not null;

-- ---------------------------------------------------------------------------------------------
-- Tokens, access codes, embeds: recorded in the ledger, applied by hookledger_write
-- ---------------------------------------------------------------------------------------------

create table api_tokens (
  id          uuid primary key,
  owner_id    text not null,
  scopes      text[] not null,
  token_hash  bytea not null unique,
  label       text not null default '',
  created_at  timestamptz not null,
  revoked_at  timestamptz
);

-- The table-backed embed scope (SPEC §4). An endpoint with an embed_id sees
-- `corpus.note.changed` only where the access code of that embed admits the note: the code's
-- role globs minus its deny globs, the published slice when the role reads only that, nothing
-- once the code is revoked or expired or the embed deleted. The fan-out asks them afresh for
-- every event and records its decision in `fanout.decided`.
create table access_codes (
  owner_id              text not null,
  id                    text not null,
  role_globs            text[] not null,
  deny_globs            text[] not null default '{}',
  reads_published_slice boolean not null,
  expires_at            timestamptz,
  revoked_at            timestamptz,
  created_at            timestamptz not null,
  updated_at            timestamptz not null,
  primary key (owner_id, id)
);

create table embeds (
  owner_id       text not null,
  id             text not null,
  access_code_id text not null,
  deleted_at     timestamptz,
  created_at     timestamptz not null,
  updated_at     timestamptz not null,
  primary key (owner_id, id),
  -- Codes are revoked, never deleted, so an embed always names a code that exists.
  foreign key (owner_id, access_code_id) references access_codes (owner_id, id)
);

-- ---------------------------------------------------------------------------------------------
-- Views
-- ---------------------------------------------------------------------------------------------

-- The attempt history, read straight from the ledger: every `delivery.attempted` entry carries
-- the whole attempt (number, run, start, duration, status, error, outcome, signing key ids), so
-- no table copies it; `ledger replay --verify` compares it with the rows the core fold derives
-- from the same entries.
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

-- ---------------------------------------------------------------------------------------------
-- Append-only: the ledger, its checkpoints and snapshots
-- ---------------------------------------------------------------------------------------------

-- Append-only, with no way around it. (Partitions leave by DROP inside the retention function.)
create function hookledger_ledger_append_only() returns trigger
language plpgsql set search_path from current as $$
begin
  raise exception 'the ledger is append-only: % on % refused', tg_op, tg_table_name
    using errcode = 'insufficient_privilege',
          hint = 'ledger rows and checkpoints are never changed; sealed partitions leave only through hookledger_ledger_retention()';
end $$;

-- Snapshot rows of superseded snapshots may go, but only from inside the owner's prune function.
create function hookledger_snapshot_rows_guard() returns trigger
language plpgsql set search_path from current as $$
begin
  if tg_op = 'DELETE' and current_user = (select c.relowner::regrole::text from pg_class c where c.oid = tg_relid) then
    return old;
  end if;
  raise exception 'snapshot rows are append-only: % refused', tg_op
    using errcode = 'insufficient_privilege',
          hint = 'superseded snapshot rows leave only through hookledger_ledger_snapshots_prune()';
end $$;

-- Row triggers on the parent are cloned to every partition; TRUNCATE is per table, so each
-- partition carries its own statement trigger (hookledger_ledger_partitions_ahead adds it to
-- every partition it creates).
create trigger ledger_append_only
  before update or delete on ledger
  for each row execute function hookledger_ledger_append_only();
create trigger ledger_no_truncate
  before truncate on ledger
  for each statement execute function hookledger_ledger_append_only();
create trigger ledger_no_truncate before truncate on ledger_p_default
  for each statement execute function hookledger_ledger_append_only();

-- Checkpoints are evidence: append-only like the ledger itself.
create trigger ledger_checkpoints_append_only
  before update or delete on ledger_checkpoints
  for each row execute function hookledger_ledger_append_only();
create trigger ledger_checkpoints_no_truncate
  before truncate on ledger_checkpoints
  for each statement execute function hookledger_ledger_append_only();

-- Snapshots are evidence too. Descriptors never leave; rows of superseded snapshots leave only
-- through hookledger_ledger_snapshots_prune().
create trigger ledger_snapshots_append_only
  before update or delete on ledger_snapshots
  for each row execute function hookledger_ledger_append_only();
create trigger ledger_snapshots_no_truncate
  before truncate on ledger_snapshots
  for each statement execute function hookledger_ledger_append_only();
create trigger ledger_snapshot_rows_append_only
  before update or delete on ledger_snapshot_rows
  for each row execute function hookledger_snapshot_rows_guard();
create trigger ledger_snapshot_rows_no_truncate
  before truncate on ledger_snapshot_rows
  for each statement execute function hookledger_ledger_append_only();

-- ---------------------------------------------------------------------------------------------
-- One door: the write functions
-- ---------------------------------------------------------------------------------------------

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
language sql immutable parallel safe as $$
  select encode(sha256(convert_to(data::text, 'UTF8')), 'hex')
$$;

create function hookledger_refuse(code text, message text) returns void
language plpgsql as $$
begin
  raise exception '%: %', code, message using errcode = 'integrity_constraint_violation', hint = code;
end $$;

-- One entry of a write, as hookledger_write parses it once (n: its place in the write).
create type hookledger_entry as (n bigint, occurred_at timestamptz, owner_id text, kind text, endpoint_id uuid,
                                 delivery_id uuid, event_id text, payload jsonb, actor text);

-- The entry kinds hookledger_write appends, and the payload fields (with their JSON types) every
-- one must carry: at least every field a projection column or a reader derives something from.
-- Kinds not here are refused; event.published, event.pruned and ledger.retention have their own
-- functions. A table, so one statement checks a whole write.
create table hookledger_entry_kinds (
  kind   text primary key,
  fields jsonb not null
);
insert into hookledger_entry_kinds (kind, fields) values
  ('fanout.decided',           '{"type":"string","matched":"array","denied":"array"}'),
  ('endpoint.created',         '{"url":"string","description":"string","event_types":"array","secret_sealed":"string","secret_key_id":"string"}'),
  ('endpoint.updated',         '{}'),
  ('endpoint.enabled',         '{}'),
  ('endpoint.disabled',        '{"reason":"string"}'),
  ('endpoint.failing',         '{"since":"string"}'),
  ('endpoint.recovered',       '{"failing_since":"string"}'),
  ('endpoint.secret_rotated',  '{"secret_sealed":"string","secret_key_id":"string","previous_key_id":"string"}'),
  ('endpoint.deleted',         '{}'),
  ('endpoint.purged',          '{"deleted_at":"string"}'),
  ('delivery.enqueued',        '{"event_type":"string","next_attempt_at":"string","cool_down":"boolean"}'),
  ('delivery.claimed',         '{"worker":"string","lease_until":"string"}'),
  ('delivery.lease_busy',      '{"next_attempt_at":"string"}'),
  ('delivery.attempted',       '{"attempt":"number","counted":"boolean","run":"number","started_at":"string","duration_ms":"number","outcome":"string","signed_with":"array"}'),
  ('delivery.completed',       '{}'),
  ('delivery.retry_scheduled', '{"next_attempt_at":"string","backoff_ms":"number"}'),
  ('delivery.snoozed',         '{"next_attempt_at":"string","retry_after_ms":"number"}'),
  ('delivery.discarded',       '{"reason":"string"}'),
  ('delivery.settle_dropped',  '{"worker":"string","claimed_by":"string","outcome":"string"}'),
  ('delivery.redelivered',     '{"run":"number","next_attempt_at":"string","previous_run":"number","previous_attempts":"number"}'),
  ('deliveries.retired',       '{"delivery_ids":"array","count":"number","cutoff":"string"}'),
  ('token.issued',             '{"token_id":"string","scopes":"array","label":"string"}'),
  ('token.revoked',            '{"token_id":"string"}'),
  ('access_code.put',          '{"access_code_id":"string","role_globs":"array","deny_globs":"array","reads_published_slice":"boolean","created":"boolean"}'),
  ('access_code.revoked',      '{"access_code_id":"string"}'),
  ('embed.put',                '{"embed_id":"string","access_code_id":"string","created":"boolean"}'),
  ('embed.deleted',            '{"embed_id":"string"}');

-- What is wrong with a write's entries (null: nothing): an entry with an unknown kind, a kind
-- only another function appends, another owner's entry, a missing id, or a payload without one
-- of its kind's fields. Over the entries as parsed once: each rule is one pass, the field rule a
-- join of the entries with their kinds' fields (no function call per entry).
create function hookledger_entries_problem(p_entries hookledger_entry[], p_owner text) returns text
language sql stable as $$
  select coalesce(
    (select case
        when e.kind is null or jsonb_typeof(e.payload) is distinct from 'object' then 'an entry needs a kind and an object payload'
        when e.owner_id is null or e.actor is null or e.occurred_at is null then e.kind || ': owner_id, actor and occurred_at are required'
        when p_owner <> '*' and e.owner_id <> p_owner then e.kind || ': entry of owner ' || e.owner_id || ' in a write for ' || p_owner
        when e.kind in ('event.published', 'event.pruned', 'ledger.retention') then e.kind || ': appended only by its own function (publish, prune, retention), never by hookledger_write'
        when e.kind like 'endpoint.%' and e.endpoint_id is null then e.kind || ': endpoint_id is required'
        when e.kind like 'delivery.%' and (e.delivery_id is null or e.endpoint_id is null or e.event_id is null) then e.kind || ': delivery_id, endpoint_id and event_id are required'
        else e.kind || ': unknown entry kind' end
     from unnest(p_entries) e
     where e.kind is null or jsonb_typeof(e.payload) is distinct from 'object' or e.owner_id is null or e.actor is null
        or e.occurred_at is null or (p_owner <> '*' and e.owner_id <> p_owner)
        or (e.kind like 'endpoint.%' and e.endpoint_id is null)
        or (e.kind like 'delivery.%' and (e.delivery_id is null or e.endpoint_id is null or e.event_id is null))
        or e.kind not in (select k.kind from hookledger_entry_kinds k)
     order by e.n limit 1),
    (select e.kind || ': payload.' || f.key || ' must be a ' || f.value
     from (select k.kind, x.key, x.value from hookledger_entry_kinds k cross join lateral jsonb_each_text(k.fields) x) f
     join unnest(p_entries) e on e.kind = f.kind
     where jsonb_typeof(e.payload -> f.key) is distinct from f.value
     order by e.n, f.key limit 1))
$$;

-- The entries of a write as rows, in order (n).

-- THE write primitive (store/src/ledger-write.ts computes the rows with core's evolve
-- functions and hands them here with their entries). In one call:
--   1. every entry is checked (hookledger_entries_problem), every row belongs to p_owner;
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
  -- Parsed once: the entries and the rows, typed.
  v_e hookledger_entry[];
  v_epc endpoints[];
  v_epx endpoints[];
  v_dlc deliveries[];
  v_dlx deliveries[];
  -- A changed row's version as the caller read it (its updated_at then), in the rows' order:
  -- checked by the update itself, which must then have written every one of them.
  v_epv timestamptz[] := array(select x::timestamptz from jsonb_array_elements_text(p_write #> '{endpoints,versions}') x);
  v_dlv timestamptz[] := array(select x::timestamptz from jsonb_array_elements_text(p_write #> '{deliveries,versions}') x);
  v_ids uuid[];
  v_n bigint;
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
  v_epc := array(select r from jsonb_populate_recordset(null::endpoints, v_ep_created) r);
  v_epx := array(select r from jsonb_populate_recordset(null::endpoints, v_ep_changed) r);
  v_dlc := array(select r from jsonb_populate_recordset(null::deliveries, v_dl_created) r);
  v_dlx := array(select r from jsonb_populate_recordset(null::deliveries, v_dl_changed) r);

  -- 2. The rows against their entries.
  if p_owner <> '*' then
    select x.id::text into v_bad from (
      select id, owner_id from unnest(v_epc || v_epx) union all select id, owner_id from unnest(v_dlc || v_dlx)
    ) x where x.owner_id is distinct from p_owner limit 1;
  end if;
  if v_bad is not null then perform hookledger_refuse('row_owner', format('row %s does not belong to owner %s', v_bad, p_owner)); end if;

  select d.id::text into v_bad
  from unnest(v_dlc || v_dlx) d
  -- Set against set (a hashed NOT IN), so a fan-out of 20,000 rows costs 20,000 probes, not 20,000².
  where d.id not in (select e.delivery_id from unnest(v_e) e where e.delivery_id is not null) limit 1;
  if v_bad is not null then perform hookledger_refuse('row_without_entry', format('delivery %s written without an entry about it', v_bad)); end if;

  select d.id::text into v_bad
  from unnest(v_dlc) d
  where (d.id, d.endpoint_id, d.event_id, d.event_type) not in (
    select e.delivery_id, e.endpoint_id, e.event_id, e.payload ->> 'event_type' from unnest(v_e) e
    where e.kind = 'delivery.enqueued' and e.delivery_id is not null and e.endpoint_id is not null
      and e.event_id is not null and e.payload ->> 'event_type' is not null) limit 1;
  if v_bad is not null then perform hookledger_refuse('row_disagrees', format('delivery %s is not what its delivery.enqueued entry says', v_bad)); end if;

  select n.id::text into v_bad
  from unnest(v_epc || v_epx) n
  left join lateral (select o.busy_delivery_id from endpoints o where o.id = n.id) o on true
  where not exists (
    select 1 from unnest(v_e) e
    where e.endpoint_id = n.id and (e.delivery_id is null or e.delivery_id = n.busy_delivery_id or e.delivery_id = o.busy_delivery_id)) limit 1;
  if v_bad is not null then perform hookledger_refuse('row_without_entry', format('endpoint %s written without an entry about it', v_bad)); end if;

  select n.id::text into v_bad
  from unnest(v_epc) n
  where not exists (
    select 1 from unnest(v_e) e
    where e.kind = 'endpoint.created' and e.endpoint_id = n.id and e.owner_id = n.owner_id
      and e.payload ->> 'url' = n.url and e.payload ->> 'description' = n.description
      and array(select jsonb_array_elements_text(e.payload -> 'event_types')) = n.event_types
      and decode(e.payload ->> 'secret_sealed', 'base64') = n.secret_sealed
      and e.payload ->> 'secret_key_id' = n.secret_key_id
      and (e.payload ->> 'embed_id') is not distinct from n.embed_id) limit 1;
  if v_bad is not null then perform hookledger_refuse('row_disagrees', format('endpoint %s is not what its endpoint.created entry says', v_bad)); end if;

  -- A changed endpoint's URL, event types and secret are the ones its latest entry set.
  select n.id::text into v_bad
  from unnest(v_epx) n
  join lateral (select o.url, o.event_types, o.secret_sealed, o.owner_id from endpoints o where o.id = n.id) o on true
  where (n.url, n.event_types, n.secret_sealed, n.owner_id) is distinct from (o.url, o.event_types, o.secret_sealed, o.owner_id)
    and not exists (
      select 1 from unnest(v_e) e
      where e.endpoint_id = n.id and e.kind in ('endpoint.updated', 'endpoint.secret_rotated')
        and n.owner_id = o.owner_id
        and (n.url = o.url or e.payload ->> 'url' = n.url)
        and (n.event_types = o.event_types or array(select jsonb_array_elements_text(e.payload -> 'event_types')) = n.event_types)
        and (n.secret_sealed = o.secret_sealed or decode(e.payload ->> 'secret_sealed', 'base64') = n.secret_sealed)) limit 1;
  if v_bad is not null then perform hookledger_refuse('row_disagrees', format('endpoint %s changed a field no entry of this write sets', v_bad)); end if;


  select x::text into v_bad from unnest(v_dl_removed) x
  where not exists (select 1 from unnest(v_e) e where e.kind = 'deliveries.retired' and e.payload -> 'delivery_ids' ? x::text) limit 1;
  if v_bad is not null then perform hookledger_refuse('row_without_entry', format('delivery %s removed without a deliveries.retired entry naming it', v_bad)); end if;
  select x::text into v_bad from unnest(v_ep_removed) x
  where not exists (select 1 from unnest(v_e) e where e.kind = 'endpoint.purged' and e.endpoint_id = x and e.delivery_id is null) limit 1;
  if v_bad is not null then perform hookledger_refuse('row_without_entry', format('endpoint %s removed without its endpoint.purged entry', v_bad)); end if;

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
        v1a_public_key, prev_v1a_key_sealed, prev_v1a_public_key, prev_v1a_key_expires_at)
      = (r.owner_id, r.url, r.description, r.event_types, r.embed_id, r.secret_sealed, r.secret_key_id,
        r.prev_secret_sealed, r.prev_secret_key_id, r.prev_secret_expires_at, r.enabled, r.disabled_reason, r.failing_since,
        r.busy_until, r.busy_delivery_id, r.deleted_at, r.created_at, r.updated_at, r.signature_scheme, r.v1a_key_sealed,
        r.v1a_public_key, r.prev_v1a_key_sealed, r.prev_v1a_public_key, r.prev_v1a_key_expires_at)
    from unnest(v_epx) r join unnest(v_ids, v_epv) as v(id, read_at) on v.id = r.id
    where t.id = any(array(select unnest(v_ids))) and t.id = r.id and t.updated_at = v.read_at;
    get diagnostics v_n = row_count;
    if v_n <> cardinality(v_epx) then
      perform hookledger_refuse('row_version', 'an endpoint changed since it was read (or is gone)');
    end if;
  end if;
  if jsonb_array_length(v_dl_created) > 0 then
    if v_keep then
      with ins as (
        insert into deliveries select * from unnest(v_dlc)
        on conflict (id) do nothing returning id)
      select coalesce(array_agg(id), '{}') into v_inserted from ins;
    else
      with ins as (insert into deliveries select * from unnest(v_dlc) returning id)
      select coalesce(array_agg(id), '{}') into v_inserted from ins;
    end if;
  end if;
  if jsonb_array_length(v_dl_changed) > 0 then
    v_ids := array(select x.id from unnest(v_dlx) x);
    if cardinality(v_dlv) <> cardinality(v_ids) then perform hookledger_refuse('row_version', 'every changed delivery needs the version it was read at'); end if;
    update deliveries t set (owner_id, endpoint_id, event_id, event_type, state, run, run_started_at, attempts,
        next_attempt_at, claimed_by, lease_until, last_status, last_error, created_at, updated_at, snoozes, snoozed_ms)
      = (r.owner_id, r.endpoint_id, r.event_id, r.event_type, r.state, r.run, r.run_started_at, r.attempts,
        r.next_attempt_at, r.claimed_by, r.lease_until, r.last_status, r.last_error, r.created_at, r.updated_at, r.snoozes, r.snoozed_ms)
    from unnest(v_dlx) r join unnest(v_ids, v_dlv) as v(id, read_at) on v.id = r.id
    -- The id list gives the planner the primary key's path whatever its estimates.
    where t.id = any(array(select unnest(v_ids))) and t.id = r.id and t.updated_at = v.read_at;
    get diagnostics v_n = row_count;
    if v_n <> cardinality(v_dlx) then
      perform hookledger_refuse('row_version', 'a delivery changed since it was read (or is gone)');
    end if;
  end if;
  if cardinality(v_dl_removed) > 0 then delete from deliveries where id = any(v_dl_removed); end if;
  if cardinality(v_ep_removed) > 0 then delete from endpoints where id = any(v_ep_removed); end if;

  -- Events decided by this write (fan-out, a test event): marked fanned out.
  if v_fanned is not null then
    select f.owner_id || '/' || f.id into v_bad from jsonb_to_recordset(v_fanned -> 'events') f(owner_id text, id text)
    where (p_owner <> '*' and f.owner_id <> p_owner)
       or (f.owner_id, f.id) not in (select e.owner_id, e.event_id from unnest(v_e) e where e.kind in ('fanout.decided', 'delivery.enqueued') and e.event_id is not null) limit 1;
    if v_bad is not null then perform hookledger_refuse('row_without_entry', format('event %s marked fanned out without its fanout.decided entry', v_bad)); end if;
    update events set fanned_out_at = (v_fanned ->> 'at')::timestamptz
    where (owner_id, id) in (select f.owner_id, f.id from jsonb_to_recordset(v_fanned -> 'events') f(owner_id text, id text));
  end if;

  -- The security projections, from their entries (the caller cannot write these rows at all).
  perform hookledger_security_apply(v_e, p_write -> 'token_hashes');

  -- 4. The entries. With `keep`, an entry about a created delivery stays only if it was inserted.
  insert into ledger (occurred_at, owner_id, kind, endpoint_id, delivery_id, event_id, payload, actor)
  select e.occurred_at, e.owner_id, e.kind, e.endpoint_id, e.delivery_id, e.event_id, e.payload, e.actor
  from unnest(v_e) e
  where not v_keep or e.delivery_id is null or e.delivery_id in (select unnest(v_inserted))
     or e.delivery_id not in (select c.id from unnest(v_dlc) c)
  order by e.n;

  -- 5. Queue heads of the endpoints this write touched.
  select coalesce(array_agg(distinct x order by x), '{}') into v_queue from (
    select r.endpoint_id from unnest(v_dlc || v_dlx) r
    union select r.id from unnest(v_epc || v_epx) r
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
create function hookledger_security_apply(p_entries hookledger_entry[], p_token_hashes jsonb) returns void
language plpgsql as $$
declare
  e record;
  n integer;
begin
  for e in select * from unnest(p_entries) w
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

create function hookledger_ledger_snapshots_prune(keep_from_seq bigint)
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

-- ---------------------------------------------------------------------------------------------
-- Partitions: made ahead, dropped whole (only the owner's functions do either)
-- ---------------------------------------------------------------------------------------------

-- Creates range partitions of `rows_per_partition` positions after the last one until they
-- reach `ahead` partitions past the next position to be drawn. Each is created on its own and
-- then attached (ATTACH does not block the writers the way CREATE … PARTITION OF does). Rows
-- that reached the default partition stay there; the next partition starts above them.
-- Returns how many partitions it created.
create function hookledger_ledger_partitions_ahead(rows_per_partition bigint, ahead integer)
returns integer
language plpgsql security definer as $$
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

-- The one way rows leave the ledger, tied to an archive. Every range partition below
-- `before_position` (null: none) is detached and dropped, lowest first; each must hold only rows
-- sealed by checkpoints up to `through_checkpoint` — rows the archive file holds. One
-- `ledger.retention` entry records the archive (through_checkpoint, the file's description),
-- up to where partitions went, and how many rows and partitions; it is appended even when no
-- partition could go, so the next archive continues after this one. Returns the rows dropped.
create function hookledger_ledger_retention(through_checkpoint bigint, before_position bigint, archive jsonb,
                                            actor text, occurred_at timestamptz)
returns bigint
language plpgsql
security definer
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

-- ---------------------------------------------------------------------------------------------
-- The first partitions
-- ---------------------------------------------------------------------------------------------

-- The first two partitions ahead of the writers, [1, 50,000,001) and [50,000,001, 100,000,001);
-- every worker's maintenance keeps two ahead from here on (store LEDGER_PARTITION_ROWS,
-- LEDGER_PARTITIONS_AHEAD). Why 50,000,000 positions a partition:
--
-- * A partition is the unit of retention: an archive drops whole partitions, each only once
--   every row in it is sealed and in the archive file. So its size is how much history may stay
--   on disk past the archive point: at most one partition, ≈ 19 GB (≈ 380 B a row with its
--   indexes).
-- * Every read that does not bound the position (one delivery's history, an endpoint's audit
--   and health, an event's decisions, the sealer's walk in chain order) plans and probes every
--   partition. Planning alone took ~40 ms at 300 empty partitions and ~0.4 s at 1,000 (shared
--   2-core VM), so the count must stay in the tens to low hundreds. At this size the count is
--   the live ledger's size over ~19 GB: 1 TB kept is ~50 partitions.
-- * In time, at ~4.3 rows a delivery (≈ 11.6M deliveries a partition): ~65 min at 3,000
--   deliveries/s, ~3.2 h at 1,000/s, ~32 h at 100/s, ~13 days at 10/s. The earlier 1,000,000
--   (≈ 380 MB) filled in ~80 s at 3,000/s, and 1 TB kept was ~2,600 partitions.
-- * The cost is at the quiet end: at 1 delivery/s a partition takes ~4.5 months to fill, and
--   the archive can drop nothing of it before then (the whole ledger is small there). Bounds in
--   time (a partition a day) would suit both ends, but a range partition's bounds are fixed
--   when it is made ahead of the writers, before the rate is known; sizing from the measured
--   rate is a later change.
select hookledger_ledger_partitions_ahead(50000000, 2);

-- Every SECURITY DEFINER and trigger function of the install: pinned to its schema, with pg_temp
-- searched last, so a caller's temporary table can never stand in for one of ours inside it.
-- The helpers they call (entry checks, the security tables, refusals) run inside them, under
-- that pinned path; a SET clause on each would stop them being inlined and cost every call,
-- and nobody else may execute them.
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
