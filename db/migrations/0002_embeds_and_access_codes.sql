-- hookledger schema, version 2: the table-backed embed scope (SPEC §4).
-- An endpoint with an embed_id sees `corpus.note.changed` only where the access code of that
-- embed admits the note: the code's role globs minus its deny globs, the published slice when
-- the role reads only that, nothing once the code is revoked or expired or the embed deleted.
-- These are plain owner tables, not projections of the ledger: the fan-out asks them afresh
-- for every event and records its decision in `fanout.decided`.

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
