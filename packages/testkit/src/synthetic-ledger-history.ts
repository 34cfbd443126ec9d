import { sql, type RawBuilder } from 'kysely'
import type { Db } from '@hookledger/store'
import { forgeDeliveries } from './delivery-forgery.js'

/**
 * A consistent synthetic history, written straight in SQL as a long-running system would have
 * accumulated it (triggers off: no write primitive made it): every delivery enqueued, claimed,
 * attempted and completed, every tenth after a 500 and a retry. Entries are appended phase by phase, so one delivery's entries lie far apart in the
 * ledger as in a real one; the live rows are what the fold gives.
 */
export async function syntheticLedgerHistory(db: Db, params: { deliveries: number; endpoints: number }): Promise<void> {
  const { deliveries, endpoints } = params
  await db.transaction().execute(async (trx) => {
    await sql`set local session_replication_role = replica`.execute(trx)
    const iso = (t: RawBuilder<unknown>) => sql`to_char((${t}) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
    await sql`
      create temp table syn_ep on commit drop as
      select j, md5('endpoint-' || j)::uuid as id, decode(md5('secret-' || j), 'hex') as sealed,
             '2030-01-01T00:00:00Z'::timestamptz + (j || ' ms')::interval as at
      from generate_series(0, ${endpoints - 1}) j
    `.execute(trx)
    await sql`
      create temp table syn_d on commit drop as
      select i, md5('delivery-' || i)::uuid as id, md5('endpoint-' || (i % ${endpoints}))::uuid as endpoint_id,
             'evt_' || i as event_id, '2030-01-01T01:00:00Z'::timestamptz + (i * 10 || ' ms')::interval as enq,
             (i % 10 = 0) as retried
      from generate_series(1, ${deliveries}) i
    `.execute(trx)
    await sql`
      insert into ledger (occurred_at, owner_id, kind, endpoint_id, payload, actor)
      select at, 'syn', 'endpoint.created', id,
        jsonb_build_object('url', 'https://example.test/' || j, 'description', '', 'event_types', jsonb_build_array('*'),
          'embed_id', null, 'secret_sealed', encode(sealed, 'base64'), 'secret_key_id', 'key_' || j), 'owner:syn'
      from syn_ep order by j
    `.execute(trx)
    await sql`
      insert into endpoints
      select id, 'syn', 'https://example.test/' || j, '', '{*}', null, sealed, 'key_' || j, null, null, null,
        true, null, null, null, null, null, at, at
      from syn_ep
    `.execute(trx)
    const append = (kind: string, at: RawBuilder<unknown>, payload: RawBuilder<unknown>, where: RawBuilder<unknown>) => sql`
      insert into ledger (occurred_at, owner_id, kind, endpoint_id, delivery_id, event_id, payload, actor)
      select ${at}, 'syn', ${kind}, endpoint_id, id, event_id, ${payload}, 'worker:syn' from syn_d where ${where} order by i
    `
    const attempted = (at: RawBuilder<unknown>, no: number, status: number, outcome: string) =>
      sql`jsonb_build_object('attempt', ${no}::int, 'counted', true, 'run', 1, 'started_at', ${iso(at)}, 'duration_ms', 40,
        'status_code', ${status}::int, 'error', ${status === 500 ? 'HTTP 500' : null}::text, 'outcome', ${outcome}::text,
        'signed_with', jsonb_build_array('key'))`
    const claimed = (at: RawBuilder<unknown>) => sql`jsonb_build_object('worker', 'worker:syn', 'lease_until', ${iso(sql`${at} + interval '15 s'`)})`
    const t = (ms: number) => sql`enq + ${`${ms} ms`}::interval`
    await append('delivery.enqueued', sql`enq`, sql`jsonb_build_object('event_type', 'booking.created', 'next_attempt_at', ${iso(sql`enq`)}, 'cool_down', false)`, sql`true`).execute(trx)
    await append('delivery.claimed', t(1000), claimed(t(1000)), sql`true`).execute(trx)
    for (const [retried, status, outcome] of [[false, 200, 'completed'], [true, 500, 'retry_scheduled']] as const) {
      await sql`
        insert into ledger (occurred_at, owner_id, kind, endpoint_id, delivery_id, event_id, payload, actor)
        select ${t(1100)}, 'syn', k.kind, endpoint_id, id, event_id, k.payload, 'worker:syn'
        from syn_d cross join lateral (values
          (1, 'delivery.attempted', ${attempted(t(1100), 1, status, outcome)}),
          (2, ${outcome === 'completed' ? 'delivery.completed' : 'delivery.retry_scheduled'}::text,
            ${outcome === 'completed' ? sql`'{}'::jsonb` : sql`jsonb_build_object('next_attempt_at', ${iso(t(6100))}, 'backoff_ms', 5000)`})
        ) k(o, kind, payload)
        where retried = ${retried} order by i, k.o
      `.execute(trx)
    }
    await append('delivery.claimed', t(7000), claimed(t(7000)), sql`retried`).execute(trx)
    await sql`
      insert into ledger (occurred_at, owner_id, kind, endpoint_id, delivery_id, event_id, payload, actor)
      select ${t(7100)}, 'syn', k.kind, endpoint_id, id, event_id, k.payload, 'worker:syn'
      from syn_d cross join lateral (values (1, 'delivery.attempted', ${attempted(t(7100), 2, 200, 'completed')}), (2, 'delivery.completed', '{}'::jsonb)) k(o, kind, payload)
      where retried order by i, k.o
    `.execute(trx)
    await forgeDeliveries(trx, sql`
      select id, 'syn', endpoint_id, event_id, 'booking.created', 'completed', 1, enq, case when retried then 2 else 1 end,
        null, null, null, 200, null, enq, case when retried then ${t(7100)} else ${t(1100)} end
      from syn_d
    `)
  })
  for (const table of ['ledger', 'delivery_origins', 'delivery_states', 'endpoints']) await sql`vacuum analyze ${sql.ref(table)}`.execute(db)
}
