-- hookledger schema, version 5: one index less on the hottest table.
-- A delivery's id is now derived from its (endpoint, event) pair (core `deliveryIdFor`), so the
-- primary key enforces "one delivery per endpoint and event" and fan-out inserts with
-- `on conflict (id) do nothing`. The second unique index cost every insert and every state
-- change of a delivery one more index entry (~115 bytes per delivery).
-- Rows enqueued before this migration keep random ids; their events were already fanned out,
-- and fan-out runs once per event, so they cannot be enqueued twice.
drop index deliveries_endpoint_event_key;
