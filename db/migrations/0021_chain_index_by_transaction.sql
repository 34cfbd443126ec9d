-- 0021 the chain-order index keys on the transaction alone.
--
-- ledger_chain_order_idx held (tx_id, position): one 16-byte key an entry, every entry unique, so
-- btree deduplication could never apply, and it took 64 B of index a delivered delivery (two
-- ledger rows; `npm run bench -- --only=drain,footprint`, bytes_by_relation). A transaction
-- writes many rows (a settle-and-claim call of the drain writes ~96), and all of them share its
-- tx_id: keyed on tx_id alone, deduplication stores them as one key and a posting list, ~6 B a
-- row after the first.
--
-- Every reader still walks the chain in (tx_id, position) order: the planner reads the index in
-- tx_id order and sorts each transaction's few rows by position (an Incremental Sort, presorted
-- on tx_id), and a row comparison `(tx_id, position) > (x, y)` still bounds the scan: the planner
-- derives `tx_id >= x` from it as the index condition (ledger-tail.int.spec.ts holds the plan).
--
-- The index is built over the whole ledger, its partitions included, while writes wait: on an
-- install with a long history, expect a pause of the order of a second a million rows.

create index ledger_chain_tx_idx on ledger (tx_id);
drop index ledger_chain_order_idx;
