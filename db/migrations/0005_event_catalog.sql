-- The event catalog in the database: the types this installation declares, beside the built-in
-- ones (the seed's 39 and hookledger's operational events, defined in core's event-catalog.ts,
-- never stored here). The service and the publisher read the same rows, so they cannot
-- disagree on what may be published (docs/contract.md §9).
--
-- * A row follows from its ledger entries alone, like the security tables: `event_type.declared`
--   inserts it, `event_type.updated` sets the fields it names, `event_type.deprecated` marks it.
--   hookledger_write applies them (through hookledger_security_apply); a direct write is refused.
-- * Installation-wide (no owner_id): every owner publishes the same types. Its entries carry the
--   operator's owner `*`.
-- * Types are never deleted: a type once published stays explainable. Deprecation is the end.

create table event_types (
  name               text primary key check (name ~ '^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$' and length(name) <= 200),
  description        text not null,
  exposure           text not null check (exposure in ('webhook', 'internal')),
  group_name         text not null,
  -- A JSON Schema (2020-12) that an event's `data` must match; null: any object.
  data_schema        jsonb check (data_schema is null or jsonb_typeof(data_schema) = 'object'),
  deprecated_at      timestamptz,
  deprecation_reason text,
  -- After it, publishing the (deprecated) type is refused.
  sunset_at          timestamptz,
  declared_at        timestamptz not null,
  updated_at         timestamptz not null
);

create trigger event_types_one_door before insert or update or delete on event_types
  for each statement execute function hookledger_refuse_direct_write();

-- Replay rebuilds the table from these entries without scanning the ledger.
create index ledger_event_type_idx on ledger (kind, position)
  where kind in ('event_type.declared', 'event_type.updated', 'event_type.deprecated');

insert into hookledger_entry_kinds (kind, fields) values
  ('event_type.declared',   '{"name":"string","description":"string","exposure":"string","group":"string"}'),
  ('event_type.updated',    '{"name":"string"}'),
  ('event_type.deprecated', '{"name":"string","reason":"string"}');

-- The catalog's rows follow their entries (called by hookledger_security_apply, inside
-- hookledger_write, as the owner).
create function hookledger_event_types_apply(p_entries hookledger_entry[]) returns void
language plpgsql as $$
declare
  e record;
  n integer;
begin
  for e in select * from unnest(p_entries) w
           where w.kind in ('event_type.declared', 'event_type.updated', 'event_type.deprecated')
           order by w.n
  loop
    case e.kind
      when 'event_type.declared' then
        insert into event_types (name, description, exposure, group_name, data_schema, deprecated_at, deprecation_reason, sunset_at, declared_at, updated_at)
        values (e.payload ->> 'name', e.payload ->> 'description', e.payload ->> 'exposure', e.payload ->> 'group',
                nullif(e.payload -> 'schema', 'null'::jsonb), null, null, null, e.occurred_at, e.occurred_at)
        on conflict (name) do nothing;
        get diagnostics n = row_count;
        if n = 0 then perform hookledger_refuse('event_type_exists', format('event type %s is already declared', e.payload ->> 'name')); end if;
      when 'event_type.updated' then
        update event_types set
          description = case when e.payload ? 'description' then e.payload ->> 'description' else description end,
          exposure = case when e.payload ? 'exposure' then e.payload ->> 'exposure' else exposure end,
          group_name = case when e.payload ? 'group' then e.payload ->> 'group' else group_name end,
          data_schema = case when e.payload ? 'schema' then nullif(e.payload -> 'schema', 'null'::jsonb) else data_schema end,
          updated_at = e.occurred_at
        where name = e.payload ->> 'name';
        get diagnostics n = row_count;
        if n = 0 then perform hookledger_refuse('event_type_not_declared', format('event type %s is not declared', e.payload ->> 'name')); end if;
      when 'event_type.deprecated' then
        update event_types set deprecated_at = e.occurred_at, deprecation_reason = e.payload ->> 'reason',
          sunset_at = (e.payload ->> 'sunset_at')::timestamptz, updated_at = e.occurred_at
        where name = e.payload ->> 'name' and deprecated_at is null;
        get diagnostics n = row_count;
        if n = 0 then perform hookledger_refuse('event_type_not_live', format('event type %s is not declared, or already deprecated', e.payload ->> 'name')); end if;
    end case;
  end loop;
end $$;

-- hookledger_write (0002) calls hookledger_security_apply by name: the baseline's keeps its
-- body under another name, and the new one applies the catalog's entries after it.
alter function hookledger_security_apply(hookledger_entry[], jsonb) rename to hookledger_security_apply_0001;
create function hookledger_security_apply(p_entries hookledger_entry[], p_token_hashes jsonb) returns void
language plpgsql as $$
begin
  perform hookledger_security_apply_0001(p_entries, p_token_hashes);
  perform hookledger_event_types_apply(p_entries);
end $$;
