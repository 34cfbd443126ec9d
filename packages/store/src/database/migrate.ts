import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { Migrator, sql, type Migration, type MigrationProvider } from 'kysely'
import type { Db } from './database.js'
import { dbSchemaOf } from './db-handle.js'
import { databaseGrantsApply, databaseRolesEnsure, installRoleNamesOf, schemaOwnershipEnsure, type LoginRole } from './database-roles.js'

/** Where the numbered, forward-only SQL migrations live. */
export const MIGRATIONS_DIR = fileURLToPath(new URL('../../../../db/migrations/', import.meta.url))

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
  return (await migratorFor(db, dir).getMigrations()).filter((m) => m.executedAt === undefined).map((m) => m.name)
}

/** What a migration run did to the install's roles and grants (for `hookledger db grant`). */
export interface MigrateOptions {
  /** Login roles' passwords (set on every run when given; created roles get them). */
  readonly passwords?: Partial<Record<LoginRole, string>>
  /** Called with each thing done to roles, ownership and grants. */
  readonly onAction?: (line: string) => void
  /**
   * The embedded default: the publisher role may also create tables in `public`, for an
   * application sharing the cluster (examples/bookings).
   */
  readonly publisherCreatesInPublic?: boolean
}

/**
 * Migrates as the install's owner role (creating the roles first), then applies
 * the grants. `db` connects as a superuser, a role with CREATEROLE, or the owner itself.
 */
export async function migrateToLatest(db: Db, dir = MIGRATIONS_DIR, options: MigrateOptions = {}): Promise<string[]> {
  const schema = dbSchemaOf(db)
  const say = options.onAction ?? (() => {})
  await schemaPrepare(db)
  const applied = await rolesAndOwnership(db, schema, options)
  applied.forEach(say)
  const roles = await installRoleNamesOf(db, schema)
  const { error, results } = await db.connection().execute(async (conn) => {
    await sql`set role ${sql.id(roles.owner)}`.execute(conn)
    try {
      const outcome = await migratorFor(conn as Db, dir, schema).migrateToLatest()
      if (outcome.error) return outcome
      // In one transaction, one process at a time: another session never sees the grants half
      // re-applied (a table it could not read for an instant), and two processes starting at
      // once never update the same catalog rows together. The partition maker's lock too: it
      // attaches partitions, which touches the same rows.
      await conn.transaction().execute(async (trx) => {
        await sql`select pg_advisory_xact_lock(hashtext('hookledger_roles')), pg_advisory_xact_lock(hashtext('hookledger_ledger_partitions_ahead'))`.execute(trx)
        ;(await databaseGrantsApply(trx, schema)).forEach(say)
        if (options.publisherCreatesInPublic) {
          // As the connecting role (the cluster's superuser): the owner role does not own `public`.
          await sql`reset role`.execute(trx)
          await sql`grant create on schema public to ${sql.id(roles.publisher)}`.execute(trx)
          say(`${roles.publisher}: create on schema public (the embedded default: an application sharing the cluster keeps its own tables there)`)
        }
      })
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

/** Creates the configured schema (under an advisory lock: two processes starting at once). */
async function schemaPrepare(db: Db): Promise<void> {
  const schema = dbSchemaOf(db)
  await db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(hashtext('hookledger_schema_prepare'))`.execute(trx)
    await sql`create schema if not exists ${sql.id(schema)}`.execute(trx)
  })
}
