import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { Migrator, sql, type Migration, type MigrationProvider } from 'kysely'
import type { Db } from './database.js'

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
const migratorFor = (db: Db, dir: string) =>
  new Migrator({
    db,
    provider: new SqlFileMigrationProvider(dir),
    migrationTableName: 'schema_migration',
    migrationLockTableName: 'schema_migration_lock',
  })

/** Migrations this code knows that the database has not applied (readiness: none). */
export async function migrationsPending(db: Db, dir = MIGRATIONS_DIR): Promise<string[]> {
  return (await migratorFor(db, dir).getMigrations()).filter((m) => m.executedAt === undefined).map((m) => m.name)
}

export async function migrateToLatest(db: Db, dir = MIGRATIONS_DIR): Promise<string[]> {
  const migrator = migratorFor(db, dir)
  const { error, results } = await migrator.migrateToLatest()
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')
    const message = error instanceof Error ? error.message : String(error)
    throw new Error(`migration ${failed?.migrationName ?? ''} failed: ${message}`, { cause: error })
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
}
