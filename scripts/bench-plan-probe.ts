// Probe: EXPLAIN ANALYZE of the claim and settle statements on a drain-shaped database.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { sql } from 'kysely'
import { createEventCatalog, createSecretBox, generateMasterKey, generateWebhookSecret, secretKeyId, systemClock } from '@hookledger/core'
import { createDb, endpointCreate, eventInsert, fanoutRun, migrateToLatest, openEmbeddedDatabase } from '@hookledger/store'

const dataDir = mkdtempSync(path.join(tmpdir(), 'hookledger-probe-'))
const emb = await openEmbeddedDatabase({ dataDir })
try {
  const db = createDb(new pg.Pool({ connectionString: emb.url('postgres'), max: 2 }))
  await migrateToLatest(db)
  const box = createSecretBox(generateMasterKey())
  await db.transaction().execute(async (trx) => {
    for (let i = 0; i < 100; i++) {
      const s = generateWebhookSecret()
      await endpointCreate(trx, { owner_id: 'bench', now: new Date(), actor: 'x' }, { url: `http://127.0.0.1:1/ep/${i}`, description: '', event_types: ['*'], embed_id: null, secret_sealed: box.seal(s), secret_key_id: secretKeyId(s) })
    }
  })
  for (let i = 0; i < 200; i++) {
    const now = new Date()
    await db.transaction().execute((trx) => eventInsert(trx, { owner_id: 'bench', now, actor: 'system', event: { id: `e${i}`, type: 'booking.created', subject: 'b://1', occurred_at: now, data: {} } }))
  }
  for (;;) { const r = await fanoutRun(db, { now: new Date(), catalog: createEventCatalog(), embedAdmits: async () => false, actor: 'w' }); if (r.events === 0) break }
  if (process.env.ANALYZE) await sql`analyze`.execute(db)
  const now = new Date()
  const c = await new pg.Client({ connectionString: emb.url('postgres') }); await c.connect()
  const ex = async (q: string, params: unknown[]) => {
    const r = await c.query(`explain (analyze, buffers, costs off) ${q}`, params)
    console.log(r.rows.map((x: any) => x['QUERY PLAN']).join('\n'), '\n')
  }
  await c.query('begin')
  const heads = `with heads as materialized (select h.id from endpoints e
      cross join lateral (
        select d.id, d.next_attempt_at from deliveries d
        where d.endpoint_id = e.id and d.state in ('pending', 'retryable') and d.next_attempt_at <= $1
        order by d.next_attempt_at, d.id limit 1
      ) h
      where (e.busy_until is null or e.busy_until <= $1 or not e.enabled or e.deleted_at is not null)
      order by h.next_attempt_at, h.id
      limit $2)`
  console.log('=== A: join on id only, JS filter')
  await ex(`${heads} select d.*, ev.id as ev_id from heads join deliveries d on d.id = heads.id left join events ev on ev.owner_id = d.owner_id and ev.id = d.event_id order by d.next_attempt_at, d.id for update of d skip locked`, [now, 64])
  console.log('=== B: lateral limit 1')
  await ex(`${heads} select d.*, ev.id as ev_id from heads cross join lateral (select * from deliveries d where d.id = heads.id and d.state in ('pending','retryable') and d.next_attempt_at <= $1 limit 1) d left join events ev on ev.owner_id = d.owner_id and ev.id = d.event_id order by d.next_attempt_at, d.id for update of d skip locked`, [now, 64])
  await c.query('rollback')
  // settle shapes: churn 10,000 rows through running -> completed first (dead running entries)
  for (let k = 0; k < 100; k++) {
    await c.query(`update deliveries set state = 'running', claimed_by = 'w', lease_until = $1 where id in (select id from deliveries where state = 'pending' limit 100)`, [now])
    await c.query(`update deliveries set state = 'completed', claimed_by = null, lease_until = null, next_attempt_at = null where state = 'running'`)
  }
  await c.query('begin')
  const ids = (await c.query(`${heads} select id from heads`, [now, 64])).rows.map((r) => r.id)
  const lease = new Date(now.getTime() + 15000)
  await c.query(`update deliveries set state = 'running', claimed_by = 'w', lease_until = $2 where id = any($1::uuid[])`, [ids, lease])
  const rows = JSON.stringify(ids.map((id) => ({ id, state: 'completed', claimed_by: null, lease_until: null, attempts: 1, run: 1, owner_id: 'bench', endpoint_id: null, event_id: 'x', event_type: 'booking.created', run_started_at: now, created_at: now, updated_at: now })))
  const guards = JSON.stringify(ids.map((id) => ({ id, claimed_by: 'w', lease_until: lease })))
  const upd = (extra: string) => `update deliveries d set (state, attempts) = (r.state, r.attempts)
    from jsonb_populate_recordset(null::deliveries, $1::jsonb) r,
         jsonb_to_recordset($2::jsonb) as g(id uuid, claimed_by text, lease_until timestamptz)
    where d.id = r.id and g.id = r.id ${extra}
      and d.claimed_by = g.claimed_by and d.lease_until = g.lease_until
    returning d.id`
  const idl = '{' + ids.join(',') + '}'
  for (const [name, extra] of [['current', "and d.state = 'running'"], ['no state qual + ids', `and d.id = any('${idl}'::uuid[])`], ['state + ids', `and d.state = 'running' and d.id = any('${idl}'::uuid[])`]]) {
    console.log('=== settle', name)
    await c.query('savepoint s')
    await ex(upd(extra), [rows, guards])
    await c.query('rollback to savepoint s')
  }
  await c.query('rollback')
  await c.end()
  await db.destroy()
} finally {
  await emb.stop()
  rmSync(dataDir, { recursive: true, force: true })
}
