import { readdirSync } from 'node:fs'
import { sql, type Kysely } from 'kysely'
import { describe, expect, it } from 'vitest'
import { engineHarness, testDatabase } from '@hookledger/testkit'
import { dbSchemaOf } from './db-handle.js'
import { MIGRATIONS_DIR, migrateToLatest, migrationsPending } from './migrate.js'

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

describe('hookledger lives in a schema of its own', () => {
  it('a fresh database with the application’s own events and endpoints in public: another schema name, public untouched', async () => {
    const fresh = await testDatabase({ empty: true, schema: 'acme_hooks' })
    await sql`create table public.events (id serial primary key, what text)`.execute(fresh.db)
    await sql`create table public.endpoints (id serial primary key, url text)`.execute(fresh.db)
    await sql`insert into public.events (what) values ('the app''s own')`.execute(fresh.db)
    expect(dbSchemaOf(fresh.db)).toBe('acme_hooks')
    const all = readdirSync(MIGRATIONS_DIR).filter((f) => f.endsWith('.sql')).map((f) => f.replace(/\.sql$/, ''))
    expect(await migrationsPending(fresh.db)).toEqual(all)
    expect(await migrateToLatest(fresh.db)).toEqual(all)
    expect(await migrationsPending(fresh.db)).toEqual([])
    expect(await migrateToLatest(fresh.db)).toEqual([])
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
    // pg_temp last: a caller's temporary table can never stand in for one of ours (the baseline's last step).
    for (const f of pinned.rows) expect(f.config, f.proname).toContain('search_path=hookledger, pg_temp')
    await database.close()
  })
})
