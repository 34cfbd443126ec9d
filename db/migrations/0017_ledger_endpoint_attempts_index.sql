-- hookledger schema: endpoint health (`webhooks.stats`) reads one endpoint's attempts of a
-- window (24 h or 7 d) by when they were recorded. Partial: only `delivery.attempted` entries,
-- keyed (endpoint_id, occurred_at), so a window is one range scan per ledger partition and a
-- busy neighbour's attempts are never walked. (ledger_endpoint_idx covers endpoint entries
-- without a delivery only; ledger_delivery_id_idx is per delivery.)
create index ledger_endpoint_attempts_idx on ledger (endpoint_id, occurred_at)
  where kind = 'delivery.attempted';
