/**
 * The tables beside the two projections that the ledger also commits to (the baseline migration):
 * `events` (each row's `event.published` entry carries the SHA-256 of its data), and the
 * security projections `api_tokens`, `access_codes` and `embeds`, which hookledger_write
 * derives from their entries alone, and the event catalog `event_types` (migration 0005), the
 * same way, and the owners (migration 0009; their publish bucket `publish_tat` is state, not
 * history, and is not compared). Replay rebuilds each from the ledger, in SQL (they are small beside the delivery
 * history), and names every row that differs.
 */
import { sql } from 'kysely'
import type { Trx } from '@hookledger/store'

export type SideTable = 'events' | 'api_tokens' | 'access_codes' | 'embeds' | 'event_types' | 'owners'
export const SIDE_TABLES: readonly SideTable[] = ['events', 'api_tokens', 'access_codes', 'embeds', 'event_types', 'owners']

export interface SideTableDifference {
  readonly table: SideTable
  readonly key: string
  readonly kind: 'changed' | 'missing_live' | 'extra_live'
  readonly live: Record<string, unknown> | null
  readonly replayed: Record<string, unknown> | null
  /** The entry the rebuilt row comes from (its latest), when there is one. */
  readonly position: string | null
}

// Each query answers key, live (the row as stored, null when absent) and replayed (as the
// ledger says it should be, null when no entry made it), only where they differ.
const QUERIES: Record<SideTable, ReturnType<typeof sql>> = {
  events: sql`
    select e.owner_id || '/' || e.id as key,
           jsonb_build_object('type', e.type, 'subject', e.subject, 'data_sha256', encode(sha256(convert_to(e.data::text, 'UTF8')), 'hex')) as live,
           case when l.position is null then null
                else jsonb_build_object('type', l.payload ->> 'type', 'subject', l.payload ->> 'subject', 'data_sha256', l.payload ->> 'data_sha256') end as replayed,
           l.position::text as position,
           l.position is not null as complete
    from events e
    left join ledger l on l.kind = 'event.published' and l.owner_id = e.owner_id and l.event_id = e.id
    where l.position is null
       or (l.payload ->> 'type', l.payload ->> 'subject', l.payload ->> 'data_sha256')
          is distinct from (e.type, e.subject, encode(sha256(convert_to(e.data::text, 'UTF8')), 'hex'))
  `,
  api_tokens: sql`
    with entries as (
      select (payload ->> 'token_id')::uuid as id, kind, owner_id, payload, occurred_at, position
      from ledger where kind in ('token.issued', 'token.revoked')
    ), expected as (
      select i.id, i.owner_id, array(select jsonb_array_elements_text(i.payload -> 'scopes')) as scopes,
             i.payload ->> 'label' as label, i.occurred_at as created_at,
             (select min(r.occurred_at) from entries r where r.kind = 'token.revoked' and r.id = i.id and r.owner_id = i.owner_id) as revoked_at,
             (select max(r.position) from entries r where r.id = i.id) as position
      from entries i where i.kind = 'token.issued'
    )
    select coalesce(x.id, t.id)::text as key,
           case when t.id is null then null else jsonb_build_object('owner_id', t.owner_id, 'scopes', t.scopes, 'label', t.label, 'created_at', t.created_at, 'revoked_at', t.revoked_at) end as live,
           case when x.id is null then null else jsonb_build_object('owner_id', x.owner_id, 'scopes', x.scopes, 'label', x.label, 'created_at', x.created_at, 'revoked_at', x.revoked_at) end as replayed,
           x.position::text as position,
           x.id is not null as complete
    from expected x full join api_tokens t on t.id = x.id
    where (x.owner_id, x.scopes, x.label, x.created_at, x.revoked_at) is distinct from (t.owner_id, t.scopes, t.label, t.created_at, t.revoked_at)
  `,
  access_codes: sql`
    with entries as (
      select owner_id, payload ->> 'access_code_id' as id, kind, payload, occurred_at, position
      from ledger where kind in ('access_code.put', 'access_code.revoked')
    ), latest_put as (
      select distinct on (owner_id, id) * from entries where kind = 'access_code.put' order by owner_id, id, position desc
    ), expected as (
      select p.owner_id, p.id,
             array(select jsonb_array_elements_text(p.payload -> 'role_globs')) as role_globs,
             array(select jsonb_array_elements_text(p.payload -> 'deny_globs')) as deny_globs,
             (p.payload ->> 'reads_published_slice')::boolean as reads_published_slice,
             (p.payload ->> 'expires_at')::timestamptz as expires_at,
             (select min(r.occurred_at) from entries r where r.kind = 'access_code.revoked' and (r.owner_id, r.id) = (p.owner_id, p.id)) as revoked_at,
             (select min(r.occurred_at) from entries r where r.kind = 'access_code.put' and (r.owner_id, r.id) = (p.owner_id, p.id)) as created_at,
             (select max(r.occurred_at) from entries r where (r.owner_id, r.id) = (p.owner_id, p.id)) as updated_at,
             (select max(r.position) from entries r where (r.owner_id, r.id) = (p.owner_id, p.id)) as position,
             exists (select 1 from entries r where r.kind = 'access_code.put' and (r.payload ->> 'created')::boolean and (r.owner_id, r.id) = (p.owner_id, p.id)) as complete
      from latest_put p
    )
    select coalesce(x.owner_id || '/' || x.id, c.owner_id || '/' || c.id) as key,
           case when c.id is null then null else jsonb_build_object('role_globs', c.role_globs, 'deny_globs', c.deny_globs, 'reads_published_slice', c.reads_published_slice, 'expires_at', c.expires_at, 'revoked_at', c.revoked_at, 'created_at', c.created_at, 'updated_at', c.updated_at) end as live,
           case when x.id is null then null else jsonb_build_object('role_globs', x.role_globs, 'deny_globs', x.deny_globs, 'reads_published_slice', x.reads_published_slice, 'expires_at', x.expires_at, 'revoked_at', x.revoked_at, 'created_at', x.created_at, 'updated_at', x.updated_at) end as replayed,
           x.position::text as position,
           coalesce(x.complete, false) as complete
    from expected x full join access_codes c on (c.owner_id, c.id) = (x.owner_id, x.id)
    where (x.role_globs, x.deny_globs, x.reads_published_slice, x.expires_at, x.revoked_at, x.created_at, x.updated_at)
          is distinct from (c.role_globs, c.deny_globs, c.reads_published_slice, c.expires_at, c.revoked_at, c.created_at, c.updated_at)
  `,
  embeds: sql`
    with entries as (
      select owner_id, payload ->> 'embed_id' as id, kind, payload, occurred_at, position
      from ledger where kind in ('embed.put', 'embed.deleted')
    ), latest as (
      select distinct on (owner_id, id) * from entries order by owner_id, id, position desc
    ), expected as (
      select l.owner_id, l.id,
             (select p.payload ->> 'access_code_id' from entries p where p.kind = 'embed.put' and (p.owner_id, p.id) = (l.owner_id, l.id) order by p.position desc limit 1) as access_code_id,
             case when l.kind = 'embed.deleted' then l.occurred_at end as deleted_at,
             (select min(p.occurred_at) from entries p where p.kind = 'embed.put' and (p.owner_id, p.id) = (l.owner_id, l.id)) as created_at,
             l.occurred_at as updated_at, l.position,
             exists (select 1 from entries p where p.kind = 'embed.put' and (p.payload ->> 'created')::boolean and (p.owner_id, p.id) = (l.owner_id, l.id)) as complete
      from latest l
    )
    select coalesce(x.owner_id || '/' || x.id, m.owner_id || '/' || m.id) as key,
           case when m.id is null then null else jsonb_build_object('access_code_id', m.access_code_id, 'deleted_at', m.deleted_at, 'created_at', m.created_at, 'updated_at', m.updated_at) end as live,
           case when x.id is null then null else jsonb_build_object('access_code_id', x.access_code_id, 'deleted_at', x.deleted_at, 'created_at', x.created_at, 'updated_at', x.updated_at) end as replayed,
           x.position::text as position,
           coalesce(x.complete, false) as complete
    from expected x full join embeds m on (m.owner_id, m.id) = (x.owner_id, x.id)
    where (x.access_code_id, x.deleted_at, x.created_at, x.updated_at) is distinct from (m.access_code_id, m.deleted_at, m.created_at, m.updated_at)
  `,
  // Each field is what the latest entry naming it set (declared sets all; updated only those it
  // carries); deprecated is set once.
  event_types: sql`
    with entries as (
      select payload ->> 'name' as name, kind, payload, occurred_at, position
      from ledger where kind in ('event_type.declared', 'event_type.updated', 'event_type.deprecated')
    ), declared as (
      select distinct on (name) * from entries where kind = 'event_type.declared' order by name, position
    ), expected as (
      select d.name,
             (select e.payload ->> 'description' from entries e where e.name = d.name and e.payload ? 'description' and e.kind <> 'event_type.deprecated' order by e.position desc limit 1) as description,
             (select e.payload ->> 'exposure' from entries e where e.name = d.name and e.payload ? 'exposure' order by e.position desc limit 1) as exposure,
             (select e.payload ->> 'group' from entries e where e.name = d.name and e.payload ? 'group' order by e.position desc limit 1) as group_name,
             (select nullif(e.payload -> 'schema', 'null'::jsonb) from entries e where e.name = d.name and e.payload ? 'schema' order by e.position desc limit 1) as data_schema,
             p.occurred_at as deprecated_at, p.payload ->> 'reason' as deprecation_reason, (p.payload ->> 'sunset_at')::timestamptz as sunset_at,
             d.occurred_at as declared_at,
             (select e.occurred_at from entries e where e.name = d.name order by e.position desc limit 1) as updated_at,
             (select max(e.position) from entries e where e.name = d.name) as position
      from declared d
      left join lateral (select * from entries e where e.name = d.name and e.kind = 'event_type.deprecated' order by e.position limit 1) p on true
    )
    select coalesce(x.name, t.name) as key,
           case when t.name is null then null else jsonb_build_object('description', t.description, 'exposure', t.exposure, 'group', t.group_name, 'schema', t.data_schema, 'deprecated_at', t.deprecated_at, 'deprecation_reason', t.deprecation_reason, 'sunset_at', t.sunset_at, 'declared_at', t.declared_at, 'updated_at', t.updated_at) end as live,
           case when x.name is null then null else jsonb_build_object('description', x.description, 'exposure', x.exposure, 'group', x.group_name, 'schema', x.data_schema, 'deprecated_at', x.deprecated_at, 'deprecation_reason', x.deprecation_reason, 'sunset_at', x.sunset_at, 'declared_at', x.declared_at, 'updated_at', x.updated_at) end as replayed,
           x.position::text as position,
           x.name is not null as complete
    from expected x full join event_types t on t.name = x.name
    where (x.description, x.exposure, x.group_name, x.data_schema, x.deprecated_at, x.deprecation_reason, x.sunset_at, x.declared_at, x.updated_at)
          is distinct from (t.description, t.exposure, t.group_name, t.data_schema, t.deprecated_at, t.deprecation_reason, t.sunset_at, t.declared_at, t.updated_at)
  `,
  // Each limit is what the latest `owner.limits_set` naming it set (weight cleared is 1); the
  // suspension is the latest of suspended/resumed. The row is made by the owner's first entry.
  owners: sql`
    with entries as (
      select owner_id as id, kind, payload, occurred_at, position
      from ledger where kind in ('owner.limits_set', 'owner.suspended', 'owner.resumed')
    ), expected as (
      select o.id,
             coalesce((select (e.payload #>> '{limits,weight}')::integer from entries e where e.id = o.id and e.kind = 'owner.limits_set' and e.payload -> 'limits' ? 'weight' order by e.position desc limit 1), 1) as weight,
             (select (e.payload #>> '{limits,publish_per_second}')::double precision from entries e where e.id = o.id and e.kind = 'owner.limits_set' and e.payload -> 'limits' ? 'publish_per_second' order by e.position desc limit 1) as publish_per_second,
             (select (e.payload #>> '{limits,publish_burst}')::integer from entries e where e.id = o.id and e.kind = 'owner.limits_set' and e.payload -> 'limits' ? 'publish_burst' order by e.position desc limit 1) as publish_burst,
             (select (e.payload #>> '{limits,max_endpoints}')::integer from entries e where e.id = o.id and e.kind = 'owner.limits_set' and e.payload -> 'limits' ? 'max_endpoints' order by e.position desc limit 1) as max_endpoints,
             (select (e.payload #>> '{limits,max_in_flight}')::integer from entries e where e.id = o.id and e.kind = 'owner.limits_set' and e.payload -> 'limits' ? 'max_in_flight' order by e.position desc limit 1) as max_in_flight,
             case when s.kind = 'owner.suspended' then s.occurred_at end as suspended_at,
             case when s.kind = 'owner.suspended' then s.payload ->> 'reason' end as suspended_reason,
             o.created_at, o.updated_at, o.position
      from (select id, min(occurred_at) as created_at, max(occurred_at) as updated_at, max(position) as position from entries group by id) o
      left join lateral (select * from entries e where e.id = o.id and e.kind <> 'owner.limits_set' order by e.position desc limit 1) s on true
    )
    select coalesce(x.id, t.id) as key,
           case when t.id is null then null else jsonb_build_object('weight', t.weight, 'publish_per_second', t.publish_per_second, 'publish_burst', t.publish_burst, 'max_endpoints', t.max_endpoints, 'max_in_flight', t.max_in_flight, 'suspended_at', t.suspended_at, 'suspended_reason', t.suspended_reason, 'created_at', t.created_at, 'updated_at', t.updated_at) end as live,
           case when x.id is null then null else jsonb_build_object('weight', x.weight, 'publish_per_second', x.publish_per_second, 'publish_burst', x.publish_burst, 'max_endpoints', x.max_endpoints, 'max_in_flight', x.max_in_flight, 'suspended_at', x.suspended_at, 'suspended_reason', x.suspended_reason, 'created_at', x.created_at, 'updated_at', x.updated_at) end as replayed,
           x.position::text as position,
           -- Archived history: only an owner whose first entry (the one that made its row) is still here.
           x.id is not null and (t.id is null or t.created_at = x.created_at) as complete
    from expected x full join owners t on t.id = x.id
    where (x.weight, x.publish_per_second, x.publish_burst, x.max_endpoints, x.max_in_flight, x.suspended_at, x.suspended_reason, x.created_at, x.updated_at)
          is distinct from (t.weight, t.publish_per_second, t.publish_burst, t.max_endpoints, t.max_in_flight, t.suspended_at, t.suspended_reason, t.created_at, t.updated_at)
  `,
}

/**
 * Every row of the side tables that differs from what the ledger says (none on a healthy
 * database). Events read only their own `event.published` entry (those pruned are gone from
 * both); the security tables are rebuilt from their entries.
 */
export async function sideTablesDrift(
  trx: Trx,
  limit: number,
  options: { archived: boolean },
): Promise<{ total: number; counts: Record<SideTable, number>; rows: SideTableDifference[] }> {
  const rows: SideTableDifference[] = []
  const counts = { events: 0, api_tokens: 0, access_codes: 0, embeds: 0, event_types: 0, owners: 0 }
  for (const table of SIDE_TABLES) {
    // Once history is archived, a row whose first entry left with it cannot be rebuilt here
    // (its history is in the archive file): only rows whose whole history is still in the
    // ledger are compared. Nothing archived: every row.
    const found = (await sql<{ key: string; live: Record<string, unknown> | null; replayed: Record<string, unknown> | null; position: string | null }>`
      select key, live, replayed, position from (${QUERIES[table]}) d ${options.archived ? sql`where complete` : sql``} order by key
    `.execute(trx)).rows
    counts[table] = found.length
    for (const r of found) {
      if (rows.length >= limit) break
      rows.push({ table, key: r.key, kind: r.live === null ? 'missing_live' : r.replayed === null ? 'extra_live' : 'changed', live: r.live, replayed: r.replayed, position: r.position })
    }
  }
  return { total: Object.values(counts).reduce((a, b) => a + b, 0), counts, rows }
}
