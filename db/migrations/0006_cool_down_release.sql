-- A recovered endpoint releases what its failing cool-down held back (`delivery.cool_down_released`,
-- core/src/delivery/cool-down-release.ts): the settle that records `endpoint.recovered` makes the
-- endpoint's held-back deliveries due at once, in the same write. The write function appends only
-- the kinds this table names, with their payload fields.
insert into hookledger_entry_kinds (kind, fields) values
  ('delivery.cool_down_released', '{"next_attempt_at":"string","held_until":"string"}');
