-- v1a signatures (Standard Webhooks, ed25519): which signatures an endpoint's requests carry,
-- and its key pair. The private key (`whsk_…`) is sealed with the master key like the HMAC
-- secret; the public key (`whpk_…`) is public by design and stored as issued. The previous
-- pair keeps signing until prev_v1a_key_expires_at after a rotation, as the previous secret does.
--
-- Existing endpoints become `v1` without a key pair, which is what replaying their
-- `endpoint.created` entries (written before these fields existed) gives too.
alter table endpoints
  add column signature_scheme        text not null default 'v1'
    constraint endpoints_signature_scheme_known check (signature_scheme in ('v1', 'v1a', 'v1+v1a')),
  add column v1a_key_sealed          bytea,
  add column v1a_public_key          text,
  add column prev_v1a_key_sealed     bytea,
  add column prev_v1a_public_key     text,
  add column prev_v1a_key_expires_at timestamptz,
  -- A scheme that signs v1a always has a key pair to sign with.
  add constraint endpoints_v1a_key_present
    check (signature_scheme = 'v1' or (v1a_key_sealed is not null and v1a_public_key is not null));
