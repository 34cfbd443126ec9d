import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { inject } from 'vitest'
import { createDb, installRoleNames, roleUrl, type Db } from '@hookledger/store'
import { TEMPLATE_DB, TEST_ROLE_PASSWORDS } from './global-setup.js'

/** A database of its own for the calling test, cloned from the migrated template. */
export interface TestDatabase {
  readonly url: string
  readonly db: Db
  readonly name: string
  /** The URL of this database as one of the install's login roles (migration 0020). */
  roleUrl(role: 'service' | 'publisher' | 'reader'): string
  close(): Promise<void>
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
  const urlAs = (role: 'service' | 'publisher' | 'reader') => roleUrl(url, installRoleNames(options.schema)[role], TEST_ROLE_PASSWORDS[role])
  const pool = new pg.Pool({ connectionString: options.role ? urlAs(options.role) : url, max: options.poolSize ?? 4 })
  pool.on('error', () => {}) // idle connections dropped at teardown
  const db = createDb(pool, options.schema ? { schema: options.schema } : {})
  return {
    url,
    db,
    name,
    roleUrl: urlAs,
    close: async () => {
      await db.destroy()
    },
  }
}
