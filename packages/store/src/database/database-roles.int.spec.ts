import pg from 'pg'
import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { adminDbOf, testDatabase, TEST_ROLE_PASSWORDS } from '@hookledger/testkit'
import { createDb } from './db-handle.js'
import { installRoleNames } from './database-roles.js'
import { migrateToLatest, migrationsPending } from './migrate.js'

describe('the install’s database roles', () => {
  it('are named after the install: the default database and schema plain, any other with both', () => {
    expect(installRoleNames('hookledger', 'hookledger')).toEqual({
      owner: 'hookledger_owner', service: 'hookledger_service', publisher: 'hookledger_publisher', reader: 'hookledger_reader',
    })
    expect(installRoleNames('acme_hooks', 'app').service).toBe('hookledger_app_acme_hooks_service')
    expect(installRoleNames('hookledger', 'x'.repeat(60)).service.length).toBeLessThanOrEqual(63)
  })

  it('processes migrating at once: no catalog conflict, and the service never sees the grants half applied', async () => {
    const t = await testDatabase({ role: 'service' })
    const admins = Array.from({ length: 4 }, () => {
      const pool = new pg.Pool({ connectionString: t.url, max: 1 })
      // The teardown drops the database: a connection it ends must not surface as an unhandled error.
      pool.on('error', () => {})
      pool.on('connect', (client) => client.on('error', () => {}))
      return createDb(pool)
    })
    let reading = true
    const reads: Promise<void>[] = []
    // The service reading what every start reads, while four processes re-apply roles and grants.
    const watcher = (async () => {
      while (reading) {
        reads.push(
          migrationsPending(t.db).then((pending) => expect(pending).toEqual([])),
          sql`select count(*) from deliveries`.execute(t.db).then(() => {}),
        )
        await Promise.all(reads.splice(0))
      }
    })()
    try {
      await Promise.all(admins.map((db) => migrateToLatest(db, undefined, { passwords: TEST_ROLE_PASSWORDS })))
      await Promise.all(admins.map((db) => migrateToLatest(db, undefined, { passwords: TEST_ROLE_PASSWORDS })))
    } finally {
      reading = false
      await watcher
      await Promise.all(admins.map((db) => db.destroy()))
    }
    const me = (await sql<{ me: string }>`select current_user as me`.execute(t.db)).rows[0]!.me
    expect(me).toBe(new URL(t.roleUrl('service')).username)
    // Owns nothing.
    const owned = await sql<{ n: string }>`select count(*)::text as n from pg_class where relowner = ${me}::regrole`.execute(adminDbOf(t.db))
    expect(owned.rows[0]!.n).toBe('0')
    await t.close()
  })
})
