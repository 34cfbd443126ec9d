-- hookledger schema, version 7: signed checkpoints over the ledger's hash chain.
--
-- A sealer follows the ledger in its commit-safe order, (tx_id, position) below the oldest
-- running transaction, so it never serializes the writers on a "previous hash". Each
-- checkpoint seals the rows after the previous one: it records their positions and leaf
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
  constraint ledger_checkpoints_leaves check (octet_length(leaf_hashes) = 32 * count and cardinality(leaf_positions) = count)
);
-- A row's checkpoint: the first whose last row is at or after it.
create index ledger_checkpoints_last_idx on ledger_checkpoints (last_tx_id, last_position);

-- Checkpoints are evidence: append-only like the ledger itself.
create trigger ledger_checkpoints_append_only
  before update or delete on ledger_checkpoints
  for each row execute function hookledger_ledger_append_only();
create trigger ledger_checkpoints_no_truncate
  before truncate on ledger_checkpoints
  for each statement execute function hookledger_ledger_append_only();
