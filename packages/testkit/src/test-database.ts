import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { inject } from 'vitest'
import { createDb, DEFAULT_DB_SCHEMA, installRoleNames, migrateToLatest, roleUrl, type Db } from '@hookledger/store'
import { TEMPLATE_DB, TEST_ROLE_PASSWORDS } from './global-setup.js'

export { TEST_ROLE_PASSWORDS }

/** A database of its own for the calling test, cloned from the migrated template. */
export interface TestDatabase {
  readonly url: string
  readonly db: Db
  readonly name: string
  /** The URL of this database as one of the install's login roles (the baseline migration). */
  roleUrl(role: 'service' | 'publisher' | 'reader'): string
  /** A superuser's handle on the same database (`db` itself when it is one). */
  admin(): Db
  /** Closes its handles, then drops the database and the login roles made for it. */
  close(): Promise<void>
}

const adminOf = new WeakMap<object, () => Db>()

/** The superuser's handle on the database `db` (a test database's own handle) is open on. */
export function adminDbOf(db: Db): Db {
  const admin = adminOf.get(db)
  if (!admin) throw new Error('not a test database handle')
  return admin()
}

/**
 * Creates a fresh database from the template (migrated into the default schema), or an `empty`
 * one (not migrated) for tests of the migrations themselves, opened on `schema`. Creating a database costs milliseconds; one per
 * test keeps tests independent without truncation between them.
 */
export async function testDatabase(options: { poolSize?: number; empty?: boolean; schema?: string; role?: 'service' | 'publisher' | 'reader' } = {}): Promise<TestDatabase> {
  const serverUrl = new URL(inject('pgServerUrl'))
  const name = `t_${randomBytes(6).toString('hex')}`
  const admin = new pg.Client({ connectionString: serverUrl.toString() })
  await admin.connect()
  try {
    // FILE_COPY copies the small template's files (~20 ms here); the default WAL_LOG writes it
    // all through the WAL (~80 ms). PostgreSQL before 15 has no STRATEGY: plain copy there.
    await admin
      .query(options.empty ? `create database ${name}` : `create database ${name} template ${TEMPLATE_DB} strategy file_copy`)
      .catch((err: { code?: string }) => {
        if (err.code !== '42601' && err.code !== '42704') throw err
        return admin.query(`create database ${name} template ${TEMPLATE_DB}`)
      })
  } finally {
    await admin.end()
  }
  const url = Object.assign(new URL(serverUrl), { pathname: `/${name}` }).toString()
  const urlAs = (role: 'service' | 'publisher' | 'reader') => roleUrl(url, installRoleNames(options.schema ?? DEFAULT_DB_SCHEMA, name)[role], TEST_ROLE_PASSWORDS[role])
  const open = (connectionString: string, max: number) => {
    const pool = new pg.Pool({ connectionString, max })
    // Connections the teardown's drop ends, idle or still closing (a pool's end resolves before
    // its sockets close), must not surface as unhandled errors.
    pool.on('error', () => {})
    pool.on('connect', (client) => client.on('error', () => {}))
    // Repeated statements prepared, as the service runs them (HOOKLEDGER_DB_PREPARED_STATEMENTS).
    return createDb(pool, { prepare: true, ...(options.schema ? { schema: options.schema } : {}) })
  }
  if (!options.empty) {
    // The clone's own roles (named after its database, as every install's are), its objects
    // handed to its owner and the grants: what `migrate` does for a new install.
    const setup = open(url, 1)
    await migrateToLatest(setup, undefined, { passwords: TEST_ROLE_PASSWORDS })
    await setup.destroy()
  }
  const db = open(options.role ? urlAs(options.role) : url, options.poolSize ?? 4)
  // The superuser's handle on the same database, for what a test forges behind the functions.
  let superuser: Db | null = options.role ? null : db
  const adminDb = () => (superuser ??= open(url, 2))
  adminOf.set(db, adminDb)
  return {
    url,
    db,
    name,
    roleUrl: urlAs,
    admin: adminDb,
    close: async () => {
      await db.destroy()
      if (superuser !== null && superuser !== db) await superuser.destroy()
      await dropTestDatabase(serverUrl, name)
    },
  }
}

/**
 * A closed test's database goes, with the roles its installs made (named after it, one set per
 * schema migrated into it; roles are the cluster's, so they outlive the database otherwise).
 * `force` ends what is still connected: a process a test started and left running.
 */
async function dropTestDatabase(serverUrl: URL, name: string): Promise<void> {
  const admin = new pg.Client({ connectionString: serverUrl.toString() })
  await admin.connect()
  try {
    await admin.query(`drop database if exists ${name} with (force)`)
    const { rows } = await admin.query<{ rolname: string }>(`select rolname from pg_roles where rolname like $1`, [`hookledger\\_${name}\\_%`])
    for (const { rolname } of rows) await admin.query(`drop role if exists ${pg.escapeIdentifier(rolname)}`)
  } finally {
    await admin.end()
  }
}
