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

  it('every SECURITY DEFINER and trigger function is pinned to the schema, pg_temp last; the helpers they call only the owner may run', async () => {
    const database = await testDatabase()
    const functions = await sql<{ proname: string; config: string[] | null; definer: boolean; trigger: boolean; public_execute: boolean; service_execute: boolean }>`
      select p.proname::text, p.proconfig as config, p.prosecdef as definer, p.prorettype = 'trigger'::regtype as trigger,
             has_function_privilege('public', p.oid, 'execute') as public_execute,
             has_function_privilege(${new URL(database.roleUrl('service')).username}, p.oid, 'execute') as service_execute
      from pg_proc p join pg_namespace n on n.oid = p.pronamespace
      where n.nspname = 'hookledger' order by 1
    `.execute(database.db)
    const pinned = functions.rows.filter((f) => f.definer || f.trigger)
    expect(pinned.length).toBeGreaterThan(10)
    // pg_temp last: a caller's temporary table can never stand in for one of ours (the baseline's last step).
    for (const f of pinned) expect(f.config, f.proname).toContain('search_path=hookledger, pg_temp')
    // The helpers run only inside those, under their path: nobody else may call them.
    const helpers = functions.rows.filter((f) => !f.definer && !f.trigger)
    expect(helpers.map((f) => f.proname)).toEqual(expect.arrayContaining(['hookledger_entries_problem', 'hookledger_security_apply']))
    for (const f of helpers) expect([f.proname, f.public_execute], f.proname).toEqual([f.proname, false])
    // Two pure functions the service's own queries call: an event's data digest, and a delivery's id from its pair (0015).
    const serviceCalls = ['hookledger_event_data_sha256', 'hookledger_delivery_id']
    for (const f of helpers.filter((h) => !serviceCalls.includes(h.proname))) expect([f.proname, f.service_execute]).toEqual([f.proname, false])
    await database.close()
  })
})
