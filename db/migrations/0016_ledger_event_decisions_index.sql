-- hookledger schema: `events.explain` reads an event's `event.published` and `fanout.decided`
-- entries by event id. Partial: two rows per event, not every entry that names one.
-- Numbered 0016: 0013 and 0014 are taken by concurrent branches.
create index ledger_event_decisions_idx on ledger (event_id)
  where kind in ('event.published', 'fanout.decided');
