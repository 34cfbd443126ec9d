import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { sql, type Kysely } from 'kysely'
import { afterAll, describe, expect, it } from 'vitest'
import { generateMasterKey } from '@hookledger/core'
import { engineHarness, testDatabase, type TestDatabase } from '@hookledger/testkit'
import { createDb, dbSchemaOf } from './db-handle.js'
import { ledgerPartitions, ledgerPartitionsAhead } from './ledger-partitions.js'
import { ledgerReplayVerify } from './ledger-replay.js'
import { MIGRATIONS_DIR, migrateToLatest, migrationsPending } from './migrate.js'

// The migrations as a deployment from before 0014 had them (at 0013): everything ran in `public`.
const legacyDir = mkdtempSync(path.join(tmpdir(), 'hookledger-migrations-0013-')) + '/'
for (const f of readdirSync(MIGRATIONS_DIR).filter((f) => f.endsWith('.sql') && f < '0014')) {
  copyFileSync(path.join(MIGRATIONS_DIR, f), path.join(legacyDir, f))
}
afterAll(() => rmSync(legacyDir, { recursive: true, force: true }))

/** A second handle on the same database, opened on `schema`. */
function reopen(database: TestDatabase, schema?: string): TestDatabase {
  const db = createDb(new pg.Pool({ connectionString: database.url, max: 2 }), schema ? { schema } : {})
  return { ...database, db, close: () => db.destroy() }
}

/** What lives in one schema: relations (tables, views, partitions, sequences) and functions. */
async function objectsIn(db: Kysely<any>, schema: string): Promise<string[]> {
  const r = await sql<{ name: string }>`
    select c.relname::text as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = ${schema} and c.relkind in ('r', 'p', 'v', 'S', 'm')
    union all
    select p.proname::text || '()' from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname = ${schema}
    order by name
  `.execute(db)
  return r.rows.map((x) => x.name)
}

const counts = async (db: Kysely<any>) => {
  const r = await sql<Record<string, string>>`
    select (select count(*) from events)::text as events, (select count(*) from endpoints)::text as endpoints,
           (select count(*) from deliveries)::text as deliveries, (select count(*) from ledger)::text as ledger,
           (select count(*) from delivery_attempts)::text as attempts, (select max(position) from ledger)::text as head
  `.execute(db)
  return r.rows[0]!
}

describe('hookledger lives in a schema of its own', () => {
  it('a database at migration 0013 (all in public) moves into the schema, data and history intact', async () => {
    const legacy = await testDatabase({ empty: true, schema: 'public' })
    await migrateToLatest(legacy.db, legacyDir)
    // The application's own table beside it, which must stay where it is.
    await sql`create table bookings (id text primary key)`.execute(legacy.db)
    await sql`insert into bookings values ('b1')`.execute(legacy.db)
    const masterKey = generateMasterKey()
    const before = await engineHarness({ database: reopen(legacy, 'public'), masterKey })
    await before.createEndpoint()
    await before.createEndpoint({ url: 'http://127.0.0.1:9/unreachable' })
    for (let i = 0; i < 3; i++) await before.publish()
    // One delivery in flight per endpoint: a step each.
    for (let i = 0; i < 10 && before.receiver.requests.length < 3; i++) await before.step()
    expect(before.receiver.requests).toHaveLength(3)
    const was = await counts(legacy.db)
    await before.close()
    await legacy.close()

    const upgraded = reopen(legacy)
    // 0014 moves it; the later migrations then run in the schema.
    const pending = await migrationsPending(upgraded.db)
    expect(pending[0]).toBe('0014_own_schema')
    expect(await migrateToLatest(upgraded.db)).toEqual(pending)
    expect(await migrateToLatest(upgraded.db)).toEqual([])
    expect(await counts(upgraded.db)).toEqual(was)
    // Three published, one webhook.endpoint.failing (the unreachable endpoint); a delivery each per endpoint.
    expect(was).toMatchObject({ events: '4', endpoints: '2', deliveries: '6' })
    expect(await objectsIn(upgraded.db, 'public')).toEqual(['bookings'])
    expect(await objectsIn(upgraded.db, 'hookledger')).toEqual(expect.arrayContaining([
      'api_tokens', 'delivery_attempts', 'events', 'ledger', 'ledger_p_default', 'ledger_partitions',
      'schema_migration', 'schema_migration_lock', 'hookledger_ledger_partitions_ahead()',
    ]))
    expect((await ledgerReplayVerify(upgraded.db)).differences).toEqual([])
    // The moved functions still find their tables (pinned search_path) …
    const partitions = (await ledgerPartitions(upgraded.db)).length
    expect(await ledgerPartitionsAhead(upgraded.db, { ahead: 3 })).toBeGreaterThan(0)
    expect((await ledgerPartitions(upgraded.db)).length).toBeGreaterThan(partitions)
    expect(await objectsIn(upgraded.db, 'public')).toEqual(['bookings'])
    // … and delivery carries on where it left off.
    const after = await engineHarness({ database: upgraded, masterKey })
    await after.createEndpoint()
    await after.publish({ id: 'evt_after_upgrade' })
    await after.step()
    expect(after.receiver.requests.map((r) => r.headers['webhook-id'])).toEqual(['evt_after_upgrade'])
    expect((await after.replay()).differences).toEqual([])
    await after.close()
  })

  it('a fresh database with the application’s own events and endpoints in public: another schema name, public untouched', async () => {
    const fresh = await testDatabase({ empty: true, schema: 'acme_hooks' })
    await sql`create table public.events (id serial primary key, what text)`.execute(fresh.db)
    await sql`create table public.endpoints (id serial primary key, url text)`.execute(fresh.db)
    await sql`insert into public.events (what) values ('the app''s own')`.execute(fresh.db)
    expect(dbSchemaOf(fresh.db)).toBe('acme_hooks')
    expect(await migrateToLatest(fresh.db)).toHaveLength(readdirSync(MIGRATIONS_DIR).filter((f) => f.endsWith('.sql')).length)
    const h = await engineHarness({ database: fresh })
    await h.createEndpoint()
    await h.publish({ id: 'evt_beside_the_app' })
    await h.step()
    expect(h.receiver.requests).toHaveLength(1)
    expect((await h.replay()).differences).toEqual([])
    expect(await objectsIn(h.db, 'public')).toEqual(['endpoints', 'endpoints_id_seq', 'events', 'events_id_seq'])
    expect((await sql<{ what: string }>`select what from public.events`.execute(h.db)).rows).toEqual([{ what: "the app's own" }])
    expect(await objectsIn(h.db, 'acme_hooks')).toContain('schema_migration')
    await h.close()
  })

  it('every hookledger function is pinned to the schema, pg_temp last (its body resolves names there whatever the caller’s search_path)', async () => {
    const database = await testDatabase()
    const pinned = await sql<{ proname: string; config: string[] | null }>`
      select p.proname::text, p.proconfig as config from pg_proc p join pg_namespace n on n.oid = p.pronamespace
      where n.nspname = 'hookledger' order by 1
    `.execute(database.db)
    expect(pinned.rows.length).toBeGreaterThan(5)
    // pg_temp last: a caller's temporary table can never stand in for one of ours (migration 0020).
    for (const f of pinned.rows) expect(f.config, f.proname).toContain('search_path=hookledger, pg_temp')
    await database.close()
  })
})
