-- hookledger schema: the owner's delivery log across endpoints (`deliveries.list`), newest
-- first. One range scan of this index per page: (owner_id) equal, (created_at, id) below the
-- cursor and within since/until, the other filters (state, event_type, endpoint) checked on
-- the rows it walks. An endpoint filter uses deliveries_endpoint_list_idx instead.
-- Numbered 0015: 0013 and 0014 are taken by concurrent branches (v1a keys, the schema move).
create index deliveries_owner_log_idx on deliveries (owner_id, created_at desc, id desc);
-- With an event type named, this one: a rare type would otherwise walk (or seq-scan) the whole
-- owner's log to fill a page.
create index deliveries_owner_type_log_idx on deliveries (owner_id, event_type, created_at desc, id desc);
