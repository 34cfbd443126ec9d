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
  const heads = `select h.id from endpoints e
      cross join lateral (
        select d.id, d.next_attempt_at from deliveries d
        where d.endpoint_id = e.id and d.state in ('pending', 'retryable') and d.next_attempt_at <= $1
        order by d.next_attempt_at, d.id limit 1
      ) h
      where (e.busy_until is null or e.busy_until <= $1 or not e.enabled or e.deleted_at is not null)
      order by h.next_attempt_at, h.id
      limit $2`
  await ex(heads, [now, 64])
  const ids = (await c.query(heads, [now, 64])).rows.map((r) => r.id)
  await ex(`select * from deliveries where id = any($1::uuid[]) and state in ('pending', 'retryable') and next_attempt_at <= $2 order by next_attempt_at, id for update skip locked`, [ids, now])
  await c.query('rollback')
  await c.end()
  await db.destroy()
} finally {
  await emb.stop()
  rmSync(dataDir, { recursive: true, force: true })
}
