import pg from 'pg'
import { sql, type Kysely } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import { EVENTS_CHANNEL, eventsChannel } from '@hookledger/core'
import { eventInsert } from '@hookledger/store'
import { adminDbOf, engineHarness, eventually, testDatabase, type EngineHarness } from '@hookledger/testkit'
import { createPublisher, publish, publishMany, PublishError } from './index.js'

let open: { close(): Promise<unknown> }[] = []
afterEach(async () => {
  for (const o of open.reverse()) await o.close()
  open = []
})

async function harness(): Promise<EngineHarness> {
  const h = await engineHarness()
  open.push(h)
  return h
}

/** A pg client as an application would hold one: default search_path, no hookledger settings. */
async function appClient(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  open.push({ close: () => client.end() })
  return client
}

/** Everything an event leaves anywhere: rows, ledger entries, deliveries. */
async function footprint(db: Kysely<any>) {
  const r = await sql<{ events: string; ledger: string; deliveries: string }>`
    select (select count(*) from events)::text as events, (select count(*) from ledger)::text as ledger,
           (select count(*) from deliveries)::text as deliveries
  `.execute(db)
  return r.rows[0]!
}

const booking = (id: string, extra: Record<string, unknown> = {}) => ({
  owner_id: 'default', id, type: 'booking.created', subject: `booking://${id}`, data: { booking_id: id }, ...extra,
})

describe('publish inside the application’s transaction', () => {
  it('commit: the event is delivered, from a Kysely transaction and from a pg client', async () => {
    const h = await harness()
    await h.createEndpoint()
    const id = await h.db.transaction().execute((trx) => publish(trx, booking('evt_kysely')))
    expect(id).toBe('evt_kysely')
    const client = await appClient(h.url)
    await client.query('begin')
    expect(await publish(client, booking('evt_pg'))).toBe('evt_pg')
    await client.query('commit')
    for (let i = 0; i < 4 && h.receiver.requests.length < 2; i++) await h.step()
    expect(h.receiver.requests.map((r) => r.headers['webhook-id']).sort()).toEqual(['evt_kysely', 'evt_pg'])
    expect(JSON.parse(h.receiver.requests[0]!.body)).toMatchObject({ type: 'booking.created', data: { booking_id: expect.any(String) } })
    expect((await h.replay()).differences).toEqual([])
  })

  it('rollback, or an error thrown after publish inside the transaction: nothing anywhere', async () => {
    const h = await harness()
    await h.createEndpoint()
    const before = await footprint(h.db)
    await expect(
      h.db.transaction().execute(async (trx) => {
        await publish(trx, booking('evt_thrown'))
        throw new Error('the application changed its mind')
      }),
    ).rejects.toThrow('changed its mind')
    const client = await appClient(h.url)
    await client.query('begin')
    await publish(client, booking('evt_rolled_back'))
    await client.query('rollback')
    await h.step()
    expect(await footprint(h.db)).toEqual(before)
    expect(h.receiver.requests).toHaveLength(0)
  })

  it('NOTIFY reaches listeners on commit, not before', async () => {
    const h = await harness()
    const listener = await appClient(h.url)
    const heard: string[] = []
    listener.on('notification', (n) => heard.push(n.payload ?? ''))
    await listener.query(`listen ${EVENTS_CHANNEL}`)
    const client = await appClient(h.url)
    await client.query('begin')
    await publish(client, booking('evt_notify'))
    // A marker sent after the publish, from a committed transaction: once the listener has it,
    // anything the open transaction had sent would have arrived first. Nothing did.
    await sql`select pg_notify(${EVENTS_CHANNEL}, 'marker')`.execute(h.db)
    await eventually('the marker to arrive', () => heard.includes('marker'))
    expect(heard).toEqual(['marker'])
    await client.query('commit')
    await eventually('the publish NOTIFY, on commit', () => heard.length === 2)
    expect(heard).toEqual(['marker', ''])
  })

  it('two concurrent transactions publishing the same id: one event; different content: the conflict', async () => {
    const h = await harness()
    const a = await appClient(h.url)
    const b = await appClient(h.url)
    const bPid = (await b.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid
    await a.query('begin')
    await b.query('begin')
    await publish(a, booking('evt_race'))
    // b waits on a's row (the unique key) until a commits, then finds it there.
    const second = publish(b, booking('evt_race'))
    await eventually('b to wait on a\'s lock', async () =>
      (await sql<{ w: string | null }>`select wait_event_type as w from pg_stat_activity where pid = ${bPid}`.execute(adminDbOf(h.db))).rows[0]?.w === 'Lock')
    await a.query('commit')
    expect(await second).toBe('evt_race')
    await b.query('commit')
    const c = await appClient(h.url)
    const d = await appClient(h.url)
    await c.query('begin')
    await d.query('begin')
    await publish(c, booking('evt_race_2'))
    const conflicting = publish(d, booking('evt_race_2', { subject: 'booking://other' })).catch((e: unknown) => e)
    await c.query('commit')
    expect(await conflicting).toMatchObject({ name: 'PublishError', code: 'event_id_conflict', field: 'id' })
    await d.query('rollback')
    const rows = await sql<{ id: string; n: string }>`
      select e.id, (select count(*) from ledger l where l.event_id = e.id and l.kind = 'event.published')::text as n
      from events e order by e.id
    `.execute(h.db)
    expect(rows.rows).toEqual([{ id: 'evt_race', n: '1' }, { id: 'evt_race_2', n: '1' }])
  })

  it('is idempotent on the id: the same content is a no-op, different content a 409', async () => {
    const h = await harness()
    const publisher = createPublisher()
    const first = await h.db.transaction().execute((trx) => publisher.publishEvents(trx, [booking('evt_again')]))
    expect(first).toEqual([{ id: 'evt_again', created: true }])
    // The same content, keys in another order: nothing new.
    const again = await h.db.transaction().execute((trx) =>
      publisher.publishEvents(trx, [{ data: { booking_id: 'evt_again' }, subject: 'booking://evt_again', type: 'booking.created', id: 'evt_again', owner_id: 'default' }]),
    )
    expect(again).toEqual([{ id: 'evt_again', created: false }])
    for (const changed of [{ data: { booking_id: 'x' } }, { type: 'booking.cancelled' }, { occurred_at: '2001-01-01T00:00:00Z' }]) {
      const err = await h.db.transaction().execute((trx) => publish(trx, booking('evt_again', changed))).catch((e: unknown) => e)
      expect(err, JSON.stringify(changed)).toBeInstanceOf(PublishError)
      expect(err).toMatchObject({ code: 'event_id_conflict' })
    }
    // The same id for another owner is another event.
    await h.db.transaction().execute((trx) => publish(trx, booking('evt_again', { owner_id: 'acme' })))
    expect((await footprint(h.db)).events).toBe('2')
  })

  it('refuses what the route refuses, before writing: catalog, reserved types, size, id and field rules', async () => {
    const h = await harness()
    const refusal = (event: Record<string, unknown>) =>
      h.db.transaction().execute((trx) => publish(trx, event as never)).catch((e: PublishError) => ({ code: e.code, field: e.field }))
    expect(await refusal(booking('e1', { type: 'nobody.declared' }))).toEqual({ code: 'unknown_event_type', field: 'type' })
    expect(await refusal(booking('e1', { type: 'webhook.endpoint.failing' }))).toEqual({ code: 'reserved_event_type', field: 'type' })
    expect(await refusal(booking('e1', { data: { blob: 'x'.repeat(17_000) } }))).toEqual({ code: 'payload_too_large', field: 'data' })
    expect(await refusal(booking('has.a.dot'))).toEqual({ code: 'invalid_input', field: 'id' })
    expect(await refusal(booking('e1', { extra: 1 }))).toEqual({ code: 'invalid_input', field: 'extra' })
    expect(await refusal(booking('e1', { subject: 'a\u0000b' }))).toEqual({ code: 'invalid_input', field: 'subject' })
    expect(await refusal(booking('e1', { owner_id: 'Not An Owner' }))).toEqual({ code: 'invalid_input', field: 'owner_id' })
    expect(await refusal(booking('e1', { occurred_at: 'yesterday' }))).toEqual({ code: 'invalid_input', field: 'occurred_at' })
    expect((await footprint(h.db)).events).toBe('0')
  })

  it('needs a transaction: a plain Kysely or a pg.Pool is refused', async () => {
    const database = await testDatabase()
    open.push(database)
    await expect(publish(database.db, booking('e1'))).rejects.toThrow(/needs a transaction/)
    const pool = new pg.Pool({ connectionString: database.url, max: 1 })
    open.push({ close: () => pool.end() })
    await expect(publish(pool, booking('e1'))).rejects.toThrow(/not a pg.Pool/)
  })

  it('writes exactly what the service’s eventInsert writes', async () => {
    const database = await testDatabase()
    open.push(database)
    const now = new Date('2030-01-02T03:04:05.678Z')
    const event = { type: 'booking.created', subject: 'booking://1', occurred_at: new Date('2030-01-01T00:00:00Z'), data: { booking_id: '1', ok: true } }
    await database.db.transaction().execute((trx) =>
      eventInsert(trx, { owner_id: 'default', event: { ...event, id: 'evt_store' }, now, actor: 'system' }),
    )
    await database.db.transaction().execute((trx) =>
      createPublisher().publishEvents(trx, [{ ...event, owner_id: 'default', id: 'evt_publisher' }], { now }),
    )
    const events = await sql<Record<string, unknown>>`
      select owner_id, type, subject, occurred_at, published_at, data, fanned_out_at from events order by id desc
    `.execute(database.db)
    expect(events.rows[0]).toEqual(events.rows[1])
    const ledger = await sql<Record<string, unknown>>`
      select occurred_at, owner_id, kind, endpoint_id, delivery_id, payload, actor from ledger where event_id is not null order by event_id desc
    `.execute(database.db)
    expect(ledger.rows).toHaveLength(2)
    expect(ledger.rows[0]).toEqual(ledger.rows[1])
  })

  it('publishMany: many events in one statement, ids in order, repeats within the batch collapse', async () => {
    const h = await harness()
    await h.createEndpoint()
    const events = Array.from({ length: 500 }, (_, i) => booking(`evt_many_${i}`))
    const ids = await h.db.transaction().execute((trx) => publishMany(trx, [...events, events[0]!]))
    expect(ids).toEqual([...events.map((e) => e.id), 'evt_many_0'])
    expect(await footprint(h.db)).toMatchObject({ events: '500' })
    const conflict = await h.db.transaction().execute((trx) =>
      publishMany(trx, [booking('evt_x'), booking('evt_x', { subject: 'booking://y' })]),
    ).catch((e: PublishError) => e)
    expect(conflict).toMatchObject({ code: 'event_id_conflict', index: 1 })
    expect(await h.db.transaction().execute((trx) => publishMany(trx, []))).toEqual([])
  })

  it('into another schema, named by the publisher', async () => {
    const database = await testDatabase({ empty: true, schema: 'acme_hooks' })
    open.push(database)
    const { migrateToLatest } = await import('@hookledger/store')
    await migrateToLatest(database.db)
    // Its channel is its own: a listener on the default schema's hears nothing of it.
    const listener = await appClient(database.url)
    const heard: string[] = []
    listener.on('notification', (n) => heard.push(`${n.channel}:${n.payload ?? ''}`))
    await listener.query(`listen ${EVENTS_CHANNEL}`)
    await listener.query(`listen "${eventsChannel('acme_hooks')}"`)
    const client = await appClient(database.url)
    await client.query('begin')
    await createPublisher({ schema: 'acme_hooks' }).publish(client, booking('evt_acme'))
    await client.query('commit')
    await eventually('the publish NOTIFY', () => heard.length > 0)
    // A marker on the default channel after it: had the publish notified there, it would be first.
    await sql`select pg_notify(${EVENTS_CHANNEL}, 'marker')`.execute(database.db)
    await eventually('the marker to arrive', () => heard.length === 2)
    expect(heard).toEqual(['hookledger_events.acme_hooks:', 'hookledger_events:marker'])
    expect((await footprint(database.db)).events).toBe('1')
    await expect(publish(client, booking('evt_acme'))).rejects.toThrow(/no hookledger catalog at "hookledger".event_types: is the schema the service's HOOKLEDGER_DB_SCHEMA/)
  })
})
