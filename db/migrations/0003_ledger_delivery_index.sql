-- hookledger schema, version 3: a smaller per-delivery ledger index.
-- Every delivery has at least four ledger rows (enqueued, claimed, attempted, completed). Keyed
-- on delivery_id alone, btree deduplication stores them as one key with a posting list instead
-- of one (delivery_id, position) entry each: about 60% less index per delivery. Readers of one
-- delivery's history still go through this index and sort its few rows by position.
-- (Built in the migration's transaction: it holds back ledger writes while it runs, which is
-- instant on the small ledgers of this version; a large one would want CREATE INDEX
-- CONCURRENTLY outside a transaction.)
create index ledger_delivery_id_idx on ledger (delivery_id) where delivery_id is not null;
drop index ledger_delivery_idx;
