/**
 * The install's database roles (the baseline migration: one door into the database).
 *
 * - `owner` owns every object and runs the migrations; nobody logs in as it.
 * - `service` (the worker and the API) owns nothing: it may SELECT, lock rows, and EXECUTE the
 *   write functions — SECURITY DEFINER functions owned by `owner`, the only door for writes.
 * - `publisher` (applications publishing through @hookledger/publisher) may EXECUTE the publish
 *   functions and read the event catalog (`event_types`, migration 0005), which it checks each
 *   event against — the service's own catalog — and nothing else: it cannot read another table.
 * - `reader` (console reads, later replicas) may SELECT and nothing else.
 *
 * Role names are cluster-wide in PostgreSQL, so they name the install: in database
 * `hookledger` and schema `hookledger` (the embedded default) `hookledger_<role>`; elsewhere
 * `hookledger_<database>_<schema>_<role>` (the default schema's name left out). A credential
 * of one install never opens another install's database on the same server.
 */
import { createHash, createHmac } from 'node:crypto'
import { sql, type Kysely } from 'kysely'
import { DEFAULT_DB_SCHEMA } from '@hookledger/core'
import { HOT_TABLES } from './hot-tables-vacuum.js'

export type LoginRole = 'service' | 'publisher' | 'reader'
export const LOGIN_ROLES: readonly LoginRole[] = ['service', 'publisher', 'reader']

export interface InstallRoleNames {
  readonly owner: string
  readonly service: string
  readonly publisher: string
  readonly reader: string
}

export function installRoleNames(schema: string, database: string): InstallRoleNames {
  const parts = ['hookledger', ...(database === DEFAULT_DATABASE ? [] : [database]), ...(schema === DEFAULT_DB_SCHEMA ? [] : [schema])]
  let prefix = parts.join('_').toLowerCase().replace(/[^a-z0-9_]/g, '_')
  // PostgreSQL keeps 63 bytes of a name: a long install name is cut and made unique by a hash.
  if (prefix.length > 50) prefix = `${prefix.slice(0, 39)}_${createHash('sha256').update(parts.join('\0')).digest('hex').slice(0, 10)}`
  return { owner: `${prefix}_owner`, service: `${prefix}_service`, publisher: `${prefix}_publisher`, reader: `${prefix}_reader` }
}

/** The database the embedded default creates, whose roles are plain `hookledger_<role>`. */
export const DEFAULT_DATABASE = 'hookledger'

/** The role names of the install `db` is connected to (its database and schema). */
export async function installRoleNamesOf(db: Kysely<any>, schema: string): Promise<InstallRoleNames> {
  const database = (await sql<{ name: string }>`select current_database() as name`.execute(db)).rows[0]!.name
  return installRoleNames(schema, database)
}

/**
 * A login role's password, derived from a secret every process of the install already shares
 * (the master key): processes started apart agree on it without a credential file that could
 * drift, and nothing new has to be kept.
 */
export function rolePassword(secret: Uint8Array, role: LoginRole, schema: string = DEFAULT_DB_SCHEMA): string {
  return createHmac('sha256', secret).update(`hookledger.database-role.v1\n${schema}\n${role}`).digest('base64url')
}

/** The functions each login role may call. */
const SERVICE_FUNCTIONS = [
  'hookledger_write(text, jsonb)',
  'hookledger_publish(text, jsonb, timestamp with time zone, text)',
  'hookledger_publish_compare(text, jsonb)',
  // hookledger's own events, which an owner's publish limit and suspension do not hold back (0009).
  'hookledger_publish_internal(text, jsonb, timestamp with time zone, text)',
  // The API's publish: the owner's limit in a statement of its own, then the publish (0018).
  'hookledger_publish_admit(text, integer, timestamp with time zone)',
  'hookledger_publish_admitted(text, jsonb, timestamp with time zone, text)',
  'hookledger_events_prune(timestamp with time zone, integer, timestamp with time zone)',
  'hookledger_checkpoint_append(jsonb, bytea, bytea)',
  'hookledger_log_origin_ensure(text)',
  'hookledger_cosignature_add(jsonb)',
  'hookledger_snapshot_cut(integer)',
  'hookledger_snapshot_append(jsonb)',
  'hookledger_snapshot_rows_append(bigint, jsonb)',
  'hookledger_ledger_snapshots_prune(bigint)',
  'hookledger_ledger_partitions_ahead(bigint, integer)',
  'hookledger_ledger_retention(bigint, bigint, jsonb, text, timestamp with time zone)',
  'hookledger_event_data_sha256(jsonb)',
  // The planner's statistics after a burst (0012): ANALYZE of the hot tables, as their owner.
  'hookledger_statistics_refresh(bigint)',
]
/** Plain functions the service's and the reader's queries call (replay reads a fan-out's enqueues through it: 0015). */
const READ_FUNCTIONS = ['hookledger_delivery_id(uuid, text)']
const PUBLISHER_FUNCTIONS = ['hookledger_publish(text, jsonb, timestamp with time zone, text)', 'hookledger_publish_compare(text, jsonb)']
/** Tables the service locks rows of (`for update`/`for share` needs an UPDATE privilege on a column; the one-door trigger refuses the update itself). */
const LOCKED_TABLES = ['deliveries', 'delivery_states', 'endpoints', 'events', 'access_codes', 'embeds', 'api_tokens']
/** Tables the publisher reads: the catalog, so an application publishes exactly what the service accepts. */
const PUBLISHER_TABLES = ['event_types']

export interface RolesApplied {
  readonly roles: InstallRoleNames
  /** What was done, one line each (for `hookledger db grant`). */
  readonly actions: string[]
}

/**
 * Creates the roles that are missing (login roles with `passwords`), sets the login roles'
 * passwords when given, and makes the connecting role able to act as the owner. Needs a role
 * that may create roles (a superuser, or one with CREATEROLE).
 */
export async function databaseRolesEnsure(
  db: Kysely<any>,
  params: { schema: string; passwords?: Partial<Record<LoginRole, string>> },
): Promise<RolesApplied> {
  const roles = await installRoleNamesOf(db, params.schema)
  const actions: string[] = []
  const existing = new Set(
    (await sql<{ rolname: string }>`select rolname from pg_roles where rolname = any(${Object.values(roles)}::text[])`.execute(db)).rows.map((r) => r.rolname),
  )
  const me = (await sql<{ name: string; superuser: boolean }>`select current_user as name, rolsuper as superuser from pg_roles where rolname = current_user`.execute(db)).rows[0]!
  if (!existing.has(roles.owner)) {
    await sql`create role ${sql.id(roles.owner)} nologin`.execute(db)
    actions.push(`created role ${roles.owner} (nologin: owns every object)`)
  }
  for (const role of LOGIN_ROLES) {
    const name = roles[role]
    const password = params.passwords?.[role]
    if (!existing.has(name)) {
      await sql`create role ${sql.id(name)} login ${password ? sql`password ${sql.lit(password)}` : sql``}`.execute(db)
      actions.push(`created role ${name} (login)`)
    } else if (password) {
      await sql`alter role ${sql.id(name)} login password ${sql.lit(password)}`.execute(db)
    }
  }
  if (!me.superuser) {
    const member = (await sql<{ ok: boolean }>`select pg_has_role(current_user, ${roles.owner}, 'SET') as ok`.execute(db)).rows[0]!.ok
    if (!member) {
      await sql`grant ${sql.id(roles.owner)} to current_user`.execute(db)
      actions.push(`granted ${roles.owner} to ${me.name} (so it can migrate as the owner)`)
    }
  }
  return { roles, actions }
}

/**
 * Hands every object of the schema to the owner role (an install migrated before the roles
 * existed is owned by whoever migrated it). Run by a superuser or a member of the owner role.
 */
export async function schemaOwnershipEnsure(db: Kysely<any>, schema: string): Promise<string[]> {
  const roles = await installRoleNamesOf(db, schema)
  const actions: string[] = []
  const schemaOwner = (await sql<{ owner: string | null }>`select nspowner::regrole::text as owner from pg_namespace where nspname = ${schema}`.execute(db)).rows[0]?.owner
  if (schemaOwner === undefined || schemaOwner === null) {
    await sql`create schema if not exists ${sql.id(schema)} authorization ${sql.id(roles.owner)}`.execute(db)
    actions.push(`created schema ${schema} owned by ${roles.owner}`)
    return actions
  }
  if (schemaOwner !== roles.owner) {
    await sql`alter schema ${sql.id(schema)} owner to ${sql.id(roles.owner)}`.execute(db)
    actions.push(`schema ${schema}: owner ${schemaOwner} → ${roles.owner}`)
  }
  const objects = (
    await sql<{ kind: string; name: string }>`
      select case c.relkind when 'v' then 'view' when 'S' then 'sequence' else 'table' end as kind,
             format('%I.%I', n.nspname, c.relname) as name
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = ${schema} and c.relkind in ('r', 'p', 'v', 'S') and c.relowner <> ${roles.owner}::regrole
        and not (c.relkind = 'S' and exists (select 1 from pg_depend d where d.objid = c.oid and d.deptype in ('a', 'i')))
      union all
      select 'function', p.oid::regprocedure::text
      from pg_proc p join pg_namespace n on n.oid = p.pronamespace
      where n.nspname = ${schema} and p.proowner <> ${roles.owner}::regrole
      union all
      select 'type', format('%I.%I', n.nspname, t.typname)
      from pg_type t join pg_namespace n on n.oid = t.typnamespace
      where n.nspname = ${schema} and t.typtype in ('c', 'e', 'd') and t.typowner <> ${roles.owner}::regrole
        and (t.typrelid = 0 or (select relkind from pg_class where oid = t.typrelid) = 'c')
    `.execute(db)
  ).rows
  for (const o of objects) {
    await sql`alter ${sql.raw(o.kind)} ${sql.raw(o.name)} owner to ${sql.id(roles.owner)}`.execute(db)
  }
  if (objects.length > 0) actions.push(`${objects.length} objects of ${schema} handed to ${roles.owner}`)
  return actions
}

/**
 * The grants, from nothing each time (idempotent): PUBLIC gets nothing, the service reads and
 * calls its functions, the publisher calls publish, the reader reads. Run as the owner.
 */
export async function databaseGrantsApply(db: Kysely<any>, schema: string): Promise<string[]> {
  const r = await installRoleNamesOf(db, schema)
  const s = sql.id(schema)
  const all = sql.join([sql.id('public'), sql.id(r.service), sql.id(r.publisher), sql.id(r.reader)])
  const statements = [
    sql`revoke all on schema ${s} from ${all}`,
    sql`revoke all on all tables in schema ${s} from ${all}`,
    sql`revoke all on all sequences in schema ${s} from ${all}`,
    sql`revoke all on all functions in schema ${s} from ${all}`,
    sql`grant usage on schema ${s} to ${sql.join([sql.id(r.service), sql.id(r.publisher), sql.id(r.reader)])}`,
    sql`grant select on all tables in schema ${s} to ${sql.join([sql.id(r.service), sql.id(r.reader)])}`,
    sql`grant select on all sequences in schema ${s} to ${sql.join([sql.id(r.service), sql.id(r.reader)])}`,
    // Partitions made later (hookledger_ledger_partitions_ahead, as the owner) are readable as they come.
    sql`alter default privileges for role ${sql.id(r.owner)} in schema ${s} grant select on tables to ${sql.join([sql.id(r.service), sql.id(r.reader)])}`,
    ...LOCKED_TABLES.map((t) => sql`grant update (id) on ${sql.id(schema, t)} to ${sql.id(r.service)}`),
    // The catalog's key is its name (a catalog change locks the row it decides on).
    sql`grant update (name) on ${sql.id(schema, 'event_types')} to ${sql.id(r.service)}`,
    ...PUBLISHER_TABLES.map((t) => sql`grant select on ${sql.id(schema, t)} to ${sql.id(r.publisher)}`),
    ...SERVICE_FUNCTIONS.map((f) => sql`grant execute on function ${s}.${sql.raw(f)} to ${sql.id(r.service)}`),
    ...PUBLISHER_FUNCTIONS.map((f) => sql`grant execute on function ${s}.${sql.raw(f)} to ${sql.id(r.publisher)}`),
    ...READ_FUNCTIONS.map((f) => sql`grant execute on function ${s}.${sql.raw(f)} to ${sql.join([sql.id(r.service), sql.id(r.reader)])}`),
  ]
  // The hot tables' vacuum between autovacuum's visits (hot-tables-vacuum.ts): MAINTAIN (vacuum,
  // analyze, reindex, cluster, lock: nothing that changes a row) exists from PostgreSQL 17 on.
  const version = Number((await sql<{ v: string }>`select current_setting('server_version_num') as v`.execute(db)).rows[0]!.v)
  if (version >= 170000) statements.push(sql`grant maintain on ${sql.join(HOT_TABLES.map((t) => sql.id(schema, t)))} to ${sql.id(r.service)}`)
  for (const statement of statements) await statement.execute(db)
  return [
    `${r.service}: select on every table of ${schema}, row locks on ${LOCKED_TABLES.join(', ')}, execute on ${SERVICE_FUNCTIONS.length} write functions and ${READ_FUNCTIONS.length} read function${version >= 170000 ? `, maintain (vacuum) on ${HOT_TABLES.join(', ')}` : ''}`,
    `${r.publisher}: execute on ${PUBLISHER_FUNCTIONS.map((f) => f.replace(/\(.*/, '')).join(', ')}, select on ${PUBLISHER_TABLES.join(', ')} only`,
    `${r.reader}: select on every table of ${schema}, execute on ${READ_FUNCTIONS.map((f) => f.replace(/\(.*/, '')).join(', ')}`,
  ]
}

/** A connection URL for `role`: `base` (host, port, database) with the role's credentials. */
export function roleUrl(base: string, role: string, password: string): string {
  const url = new URL(base)
  url.username = encodeURIComponent(role)
  url.password = encodeURIComponent(password)
  return url.toString()
}
