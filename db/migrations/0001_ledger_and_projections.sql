-- hookledger schema, version 1.
-- The ledger is the truth; endpoints, deliveries and delivery_attempts are projections of it,
-- written only by the store function that appends the ledger row in the same transaction.
-- Every table carries owner_id so the data can later be distributed by owner.

create table ledger (
  position     bigint generated always as identity primary key,
  tx_id        xid8 not null default pg_current_xact_id(),
  occurred_at  timestamptz not null,
  owner_id     text not null,
  kind         text not null,
  endpoint_id  uuid,
  delivery_id  uuid,
  event_id     text,
  payload      jsonb not null default '{}'::jsonb,
  actor        text not null
);
-- Per-delivery history (attempts op) and per-endpoint audit reads.
create index ledger_delivery_idx on ledger (delivery_id, position) where delivery_id is not null;
create index ledger_endpoint_idx on ledger (endpoint_id, position) where endpoint_id is not null and delivery_id is null;

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
  updated_at           timestamptz not null
);
create index endpoints_owner_idx on endpoints (owner_id, created_at, id) where deleted_at is null;

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
  constraint deliveries_state_check
    check (state in ('pending', 'running', 'retryable', 'completed', 'discarded')),
  constraint deliveries_attempt_within_max check (attempts between 0 and 18),
  constraint deliveries_waiting_has_next_attempt
    check (state not in ('pending', 'retryable') or next_attempt_at is not null),
  constraint deliveries_running_has_lease
    check (state <> 'running' or (claimed_by is not null and lease_until is not null))
);
create unique index deliveries_endpoint_event_key on deliveries (endpoint_id, event_id);
-- The claim probes each leasable endpoint for its earliest waiting delivery. Completed and
-- discarded rows are outside the index, so the claim's cost does not grow with history, and a
-- busy endpoint's backlog is never scanned.
create index deliveries_claim_idx on deliveries (endpoint_id, next_attempt_at, id)
  where state in ('pending', 'retryable');
-- The rescuer: running rows past their lease.
create index deliveries_running_idx on deliveries (lease_until) where state = 'running';
create index deliveries_endpoint_list_idx on deliveries (endpoint_id, created_at desc, id desc);
alter table deliveries set (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 200);
alter table endpoints set (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 50);

-- One row per attempt, including interrupted ones; rebuilt from delivery.attempted rows.
create table delivery_attempts (
  ledger_position bigint primary key,
  delivery_id  uuid not null,
  attempt      integer not null,
  counted      boolean not null,
  run          integer not null,
  owner_id     text not null,
  started_at   timestamptz not null,
  duration_ms  integer not null,
  status_code  integer,
  error        text,
  outcome      text not null,
  signed_with  text[] not null,
  actor        text not null
);
create index delivery_attempts_delivery_idx on delivery_attempts (delivery_id, ledger_position);

create table api_tokens (
  id          uuid primary key,
  owner_id    text not null,
  scopes      text[] not null,
  token_hash  bytea not null unique,
  label       text not null default '',
  created_at  timestamptz not null,
  revoked_at  timestamptz
);
