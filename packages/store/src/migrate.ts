import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { Migrator, sql, type Kysely, type Migration, type MigrationProvider } from 'kysely'
import type { Db } from './database.js'
import { dbSchemaOf } from './db-handle.js'
import { databaseGrantsApply, databaseRolesEnsure, installRoleNames, schemaOwnershipEnsure, type LoginRole } from './database-roles.js'

/** Where the numbered, forward-only SQL migrations live. */
export const MIGRATIONS_DIR = fileURLToPath(new URL('../../../db/migrations/', import.meta.url))

/** Reads `NNNN_name.sql` files; each runs whole as one migration. */
class SqlFileMigrationProvider implements MigrationProvider {
  constructor(readonly dir: string) {}
  async getMigrations(): Promise<Record<string, Migration>> {
    const out: Record<string, Migration> = {}
    for (const file of readdirSync(this.dir).filter((f) => /^\d{4}_.+\.sql$/.test(f)).sort()) {
      const text = readFileSync(this.dir + file, 'utf8')
      out[file.replace(/\.sql$/, '')] = { up: async (db) => void (await sql.raw(text).execute(db)) }
    }
    return out
  }
}

/**
 * Applies pending migrations under Kysely's migration lock (an advisory lock on PostgreSQL), so
 * several processes starting at once apply each file exactly once. Throws if a migration fails
 * or if the database has migrations this code does not know (it is ahead of the code).
 */
const migratorFor = (db: Db, dir: string, tableSchema = dbSchemaOf(db)) =>
  new Migrator({
    db,
    provider: new SqlFileMigrationProvider(dir),
    migrationTableName: MIGRATION_TABLE,
    migrationLockTableName: MIGRATION_LOCK_TABLE,
    // Beside the objects they describe: an application's own migrator in `public` never sees them.
    migrationTableSchema: tableSchema,
  })

const MIGRATION_TABLE = 'schema_migration'
const MIGRATION_LOCK_TABLE = 'schema_migration_lock'

/** Migrations this code knows that the database has not applied (readiness: none). */
export async function migrationsPending(db: Db, dir = MIGRATIONS_DIR): Promise<string[]> {
  // Before 0014 moves it, a deployment's migration record is still in `public`.
  const tableSchema = (await migrationRecordUnmoved(db)) ? 'public' : dbSchemaOf(db)
  return (await migratorFor(db, dir, tableSchema).getMigrations()).filter((m) => m.executedAt === undefined).map((m) => m.name)
}

/** What a migration run did to the install's roles and grants (for `hookledger db grant`). */
export interface MigrateOptions {
  /** Login roles' passwords (set on every run when given; created roles get them). */
  readonly passwords?: Partial<Record<LoginRole, string>>
  /** Called with each thing done to roles, ownership and grants. */
  readonly onAction?: (line: string) => void
}

/**
 * Migrates as the install's owner role (creating the roles first, migration 0020), then applies
 * the grants. `db` connects as a superuser, a role with CREATEROLE, or the owner itself.
 */
export async function migrateToLatest(db: Db, dir = MIGRATIONS_DIR, options: MigrateOptions = {}): Promise<string[]> {
  const schema = dbSchemaOf(db)
  const say = options.onAction ?? (() => {})
  await schemaPrepare(db)
  const applied = await rolesAndOwnership(db, schema, options)
  applied.forEach(say)
  const roles = installRoleNames(schema)
  const { error, results } = await db.connection().execute(async (conn) => {
    await sql`set role ${sql.id(roles.owner)}`.execute(conn)
    try {
      const outcome = await migratorFor(conn as Db, dir, schema).migrateToLatest()
      if (!outcome.error) (await databaseGrantsApply(conn, schema)).forEach(say)
      return outcome
    } finally {
      await sql`reset role`.execute(conn)
    }
  })
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')
    const message = error instanceof Error ? error.message : String(error)
    throw new Error(`migration ${failed?.migrationName ?? ''} failed: ${message}`, { cause: error })
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
}

/** Roles (created when missing, with their passwords), and every object handed to the owner. */
async function rolesAndOwnership(db: Db, schema: string, options: MigrateOptions): Promise<string[]> {
  return db.transaction().execute(async (trx) => {
    // Roles are cluster-wide: one creator at a time, across databases too.
    await sql`select pg_advisory_xact_lock(hashtext('hookledger_roles'))`.execute(trx)
    const { actions } = await databaseRolesEnsure(trx, { schema, ...(options.passwords ? { passwords: options.passwords } : {}) })
    return [...actions, ...(await schemaOwnershipEnsure(trx, schema))]
  })
}

/**
 * Creates the configured schema, and moves the migration tables of a deployment from before
 * migration 0014 (they lived in `public`, with everything else) into it, so the migrator finds
 * 0001–0013 applied and runs 0014, which moves the rest. Under an advisory lock,
 * so two processes starting at once move them once.
 */
async function schemaPrepare(db: Db): Promise<void> {
  const schema = dbSchemaOf(db)
  await db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(hashtext('hookledger_schema_prepare'))`.execute(trx)
    await sql`create schema if not exists ${sql.id(schema)}`.execute(trx)
    // (The transaction is not the handle the schema is registered on: name it.)
    if (!(await migrationRecordUnmovedIn(trx, schema))) return
    for (const table of [MIGRATION_TABLE, MIGRATION_LOCK_TABLE]) {
      await sql`alter table if exists ${sql.id('public', table)} set schema ${sql.id(schema)}`.execute(trx)
    }
  })
}

/** True when `public` holds hookledger's migration record (0001 applied there) and the schema holds none. */
const migrationRecordUnmoved = (db: Db) => migrationRecordUnmovedIn(db, dbSchemaOf(db))

async function migrationRecordUnmovedIn(db: Kysely<any>, schema: string): Promise<boolean> {
  if (schema === 'public') return false
  const found = await sql<{ here: boolean; legacy: boolean }>`
    select to_regclass(${`"${schema}".${MIGRATION_TABLE}`}) is not null as here,
           to_regclass(${`public.${MIGRATION_TABLE}`}) is not null and to_regclass('public.ledger') is not null as legacy
  `.execute(db)
  const { here, legacy } = found.rows[0]!
  if (here || !legacy) return false
  // Another tool's table of the same name is not hookledger's record.
  const ours = await sql`select 1 from public.schema_migration where name = '0001_ledger_and_projections'`.execute(db)
  return ours.rows.length > 0
}
