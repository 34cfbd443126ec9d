-- hookledger schema, version 19: the projection guards' plans do not depend on statistics.
--
-- Each guard (migration 0012) anti-joins the statement's transition table with the ledger rows
-- of the current transaction. Neither side has statistics of its own, and once `ledger` has
-- been analyzed the planner estimates "this transaction's rows" at one and picks a nested loop:
-- a fan-out to 10,000 endpoints then compares 10,000 × 10,000 rows and its statement takes
-- 2.2 s instead of 0.1 s (bench `fanout-wide`, which now analyzes before it measures). Without
-- nested loops the anti-join is a hash join at every size; a one-row statement pays nothing.
alter function hookledger_deliveries_guard() set enable_nestloop = off;
alter function hookledger_endpoints_guard() set enable_nestloop = off;
