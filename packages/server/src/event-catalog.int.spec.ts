/**
 * The event catalog in the database, on a running service (in-process, real PostgreSQL, a real
 * loopback receiver): an operator declares `order.created` with a schema; it is published over
 * HTTP and by `@hookledger/publisher` inside an application's transaction (as the publisher
 * role, which reads the same catalog) and a `*` endpoint receives both, signed; undeclared and
 * reserved types and data that breaks the schema are refused alike by both ways in; an internal
 * type is counted and explained; a deprecated type warns and takes no new subscriptions; the
 * catalog file's types are declared at start; replay rebuilds the catalog from the ledger.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { sql } from 'kysely'
import { Webhook } from 'standardwebhooks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_DB_SCHEMA, encodeMasterKey, generateMasterKey } from '@hookledger/core'
import { apiTokenCreate, rolePassword, roleUrl } from '@hookledger/store'
import { ledgerReplayVerify } from '@hookledger/ledger'
import { createPublisher, PublishError } from '@hookledger/publisher'
import { TestReceiver, bypassLedgerGuards, eventually, testDatabase, type TestDatabase } from '@hookledger/testkit'
import { loadConfig } from './config.js'
import { createLogger, startService, type RunningService } from './service.js'

let database: TestDatabase
let service: RunningService
let receiver: TestReceiver
let app: pg.Client
const dataDir = mkdtempSync(path.join(tmpdir(), 'hookledger-catalog-'))
const masterKey = generateMasterKey()
let operator = ''
let owner = ''
let allSecret = ''
let allId = ''

const ORDER_SCHEMA = {
  type: 'object',
  required: ['order_id'],
  properties: { order_id: { type: 'string' }, total: { type: 'number', minimum: 0 } },
  additionalProperties: false,
}

beforeAll(async () => {
  database = await testDatabase()
  receiver = await new TestReceiver({ status: 204 }).start()
  const catalogFile = path.join(dataDir, 'catalog.json')
  writeFileSync(catalogFile, JSON.stringify([{ type: 'legacy.thing', exposure: 'webhook', group: 'legacy', description: 'From the old file.' }, { type: 'booking.created', exposure: 'webhook' }]))
  const config = loadConfig({
    DATABASE_URL: database.url,
    PORT: '0',
    HOOKLEDGER_DATA_DIR: dataDir,
    HOOKLEDGER_MASTER_KEY: encodeMasterKey(masterKey),
    HOOKLEDGER_EGRESS_ALLOW: '127.0.0.0/8',
    HOOKLEDGER_CATALOG_FILE: catalogFile,
    LOG_LEVEL: 'silent',
  })
  service = await startService(config, { role: 'all', log: createLogger(config), out: () => {} })
  operator = (await apiTokenCreate(database.db, { owner_id: '*', scopes: ['operator'], now: new Date() })).token
  owner = (await apiTokenCreate(database.db, { owner_id: 'acme', scopes: ['admin', 'publish'], now: new Date() })).token
  // The application's own connection: the install's publisher role, which may read the catalog and publish, nothing else.
  const publisherRole = new URL(database.roleUrl('publisher')).username
  app = new pg.Client({ connectionString: roleUrl(database.url, publisherRole, rolePassword(masterKey, 'publisher', DEFAULT_DB_SCHEMA)) })
  await app.connect()
  const all = await call('POST', '/api/admin/webhooks', owner, { url: receiver.url('/all'), event_types: ['*'] })
  expect(all.status, JSON.stringify(all.body)).toBe(201)
  allSecret = all.body.secret
  allId = all.body.endpoint.id
})
afterAll(async () => {
  await app?.end()
  await service?.stop()
  await receiver?.close()
  await database?.close()
  rmSync(dataDir, { recursive: true, force: true })
})

async function call(method: string, route: string, token: string, body?: unknown) {
  const res = await fetch(`${service.url}${route}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  })
  const text = await res.text()
  return { status: res.status, headers: res.headers, contentType: res.headers.get('content-type') ?? '', body: text ? JSON.parse(text) : null }
}

/** Publishes from the application's transaction, as the publisher role: the id, or the PublishError. */
async function appPublish(event: Record<string, unknown>): Promise<string | PublishError> {
  await app.query('begin')
  try {
    const id = await createPublisher().publish(app, { owner_id: 'acme', subject: 'order://1', ...event } as never)
    await app.query('commit')
    return id
  } catch (err) {
    await app.query('rollback')
    if (err instanceof PublishError) return err
    throw err
  }
}

const received = (id: string) => receiver.requests.find((r) => r.headers['webhook-id'] === id)

describe('declare, then publish', () => {
  it('order.created with a schema, over HTTP and from an application transaction: the `*` endpoint gets both, signed', async () => {
    expect((await call('POST', '/api/operator/event_types', owner, { name: 'order.created', exposure: 'webhook' })).status).toBe(403)
    const declared = await call('POST', '/api/operator/event_types', operator, {
      name: 'order.created', exposure: 'webhook', description: 'An order was created.', group: 'orders', schema: ORDER_SCHEMA,
    })
    expect(declared.status, JSON.stringify(declared.body)).toBe(201)
    expect(declared.body).toEqual({
      name: 'order.created', description: 'An order was created.', exposure: 'webhook', group: 'orders', schema: ORDER_SCHEMA,
      builtin: false, declared: true, reserved: false, deprecated: null,
    })
    // The owner's list of subscribable types has it, with its schema; the shape is the old one plus fields.
    const types = await call('GET', '/api/admin/webhooks/event_types', owner)
    expect(types.body.data).toContainEqual({ type: 'order.created', group: 'orders', description: 'An order was created.', schema: ORDER_SCHEMA, deprecated: null })

    const http = await call('POST', '/api/events', owner, { id: 'evt_order_http', type: 'order.created', subject: 'order://1', data: { order_id: 'o1', total: 12.5 } })
    expect(http.status, JSON.stringify(http.body)).toBe(202)
    expect(await appPublish({ id: 'evt_order_app', type: 'order.created', data: { order_id: 'o2' } })).toBe('evt_order_app')

    await eventually('both deliveries', () => received('evt_order_http') && received('evt_order_app'))
    const verifier = new Webhook(allSecret)
    for (const id of ['evt_order_http', 'evt_order_app']) {
      const req = received(id)!
      expect(req.path).toBe('/all')
      expect(verifier.verify(req.body, req.headers as Record<string, string>)).toMatchObject({ id, type: 'order.created' })
    }
    const entries = await sql<{ kind: string; owner_id: string; actor: string; payload: Record<string, unknown> }>`
      select kind, owner_id, actor, payload from ledger where kind like 'event_type.%' and payload ->> 'name' = 'order.created'
    `.execute(database.db)
    expect(entries.rows).toEqual([{ kind: 'event_type.declared', owner_id: '*', actor: 'operator', payload: { name: 'order.created', description: 'An order was created.', exposure: 'webhook', group: 'orders', schema: ORDER_SCHEMA } }])
  })
})

describe('refusals, the same over HTTP and from the publisher', () => {
  it('an undeclared type: 422 unknown_event_type saying how to declare it', async () => {
    const http = await call('POST', '/api/events', owner, { type: 'order.shipped', subject: 'order://1' })
    expect(http.status).toBe(422)
    expect(http.contentType).toBe('application/problem+json')
    expect(http.body).toMatchObject({ code: 'unknown_event_type', field: 'type', detail: expect.stringContaining('POST /api/operator/event_types {"name":"order.shipped"') })
    const lib = await appPublish({ type: 'order.shipped' })
    expect(lib).toBeInstanceOf(PublishError)
    expect(lib).toMatchObject({ code: 'unknown_event_type', field: 'type', message: http.body.detail })
  })

  it.each(['webhook.test', 'webhook.endpoint.failing', 'webhook.delivery.late'])('reserved %s: 422 reserved_event_type, and it cannot be declared', async (type) => {
    const http = await call('POST', '/api/events', owner, { type, subject: 'x://1' })
    expect(http.status).toBe(422)
    expect(http.body).toMatchObject({ code: 'reserved_event_type', field: 'type' })
    expect(await appPublish({ type })).toMatchObject({ code: 'reserved_event_type' })
    const declare = await call('POST', '/api/operator/event_types', operator, { name: type, exposure: 'webhook' })
    expect(declare.status).toBe(422)
    expect(declare.body).toMatchObject({ code: 'reserved_event_type', field: 'name' })
  })

  it('data that breaks the schema: 422 event_data_invalid naming the JSON pointer', async () => {
    const http = await call('POST', '/api/events', owner, { type: 'order.created', subject: 'order://1', data: { order_id: 7 } })
    expect(http.status).toBe(422)
    expect(http.body).toMatchObject({ code: 'event_data_invalid', field: 'data.order_id', pointer: '/data/order_id', detail: expect.stringContaining('/data/order_id must be string') })
    expect(await appPublish({ type: 'order.created', data: { order_id: 'o', total: -1 } })).toMatchObject({ code: 'event_data_invalid', field: 'data.total', pointer: '/data/total' })
    expect(await appPublish({ type: 'order.created', data: {} })).toMatchObject({ pointer: '/data/order_id' })
  })

  it('catalog changes that contradict what is there: 400 a bad schema, 409 a built-in made internal or a type declared twice', async () => {
    const badSchema = await call('POST', '/api/operator/event_types', operator, { name: 'order.bad', exposure: 'webhook', schema: { type: 'objekt' } })
    expect(badSchema.status).toBe(400)
    expect(badSchema.body).toMatchObject({ code: 'invalid_input', field: 'schema' })
    const builtin = await call('POST', '/api/operator/event_types', operator, { name: 'booking.created', exposure: 'internal' })
    expect(builtin.status).toBe(409)
    expect(builtin.body).toMatchObject({ code: 'event_type_builtin', field: 'exposure' })
    const twice = await call('POST', '/api/operator/event_types', operator, { name: 'order.created', exposure: 'webhook' })
    expect(twice.status).toBe(409)
    expect(twice.body).toMatchObject({ code: 'event_type_exists' })
    const missing = await call('PATCH', '/api/operator/event_types/order.nothing', operator, { description: 'x' })
    expect(missing.status).toBe(404)
    const noExposure = await call('POST', '/api/operator/event_types', operator, { name: 'order.vague' })
    expect(noExposure.status).toBe(400)
    expect(noExposure.body).toMatchObject({ field: 'exposure' })
  })
})

describe('an internal type', () => {
  it('is stored, reaches no endpoint, is counted in hookledger_events_internal_total and explained', async () => {
    expect((await call('POST', '/api/operator/event_types', operator, { name: 'audit.tick', exposure: 'internal', description: 'Ours only.' })).status).toBe(201)
    const metric = async () => {
      const res = await fetch(`${service.url}/metrics`, { headers: { authorization: `Bearer ${operator}` } })
      return Number(/^hookledger_events_internal_total\{type="audit.tick"\} (\d+)$/m.exec(await res.text())?.[1] ?? 0)
    }
    expect(await metric()).toBe(0)
    expect((await call('POST', '/api/events', owner, { id: 'evt_tick', type: 'audit.tick', subject: 'audit://1' })).status).toBe(202)
    expect(await appPublish({ id: 'evt_tick_app', type: 'audit.tick' })).toBe('evt_tick_app')
    await eventually('both counted', async () => (await metric()) === 2)
    const explain = await call('GET', '/api/admin/events/evt_tick/explain', owner)
    expect(explain.status).toBe(200)
    expect(explain.body.exposure).toBe('internal')
    expect(explain.body.data.find((d: { endpoint_id: string }) => d.endpoint_id === allId)).toMatchObject({
      verdict: 'internal_event', reason: expect.stringContaining('"audit.tick" had exposure internal'),
    })
    // A webhook event published after them is delivered; the internal ones never were.
    await call('POST', '/api/events', owner, { id: 'evt_after_tick', type: 'order.created', subject: 'order://3', data: { order_id: 'o3' } })
    await eventually('the later event', () => received('evt_after_tick'))
    expect(received('evt_tick')).toBeUndefined()
    expect(received('evt_tick_app')).toBeUndefined()
    const webhookExplain = await call('GET', '/api/admin/events/evt_after_tick/explain', owner)
    expect(webhookExplain.body.exposure).toBe('webhook')
  })
})

describe('a deprecated type', () => {
  it('is still published, with a warning and the Deprecation and Sunset headers; no new subscription may name it', async () => {
    expect((await call('POST', '/api/operator/event_types', operator, { name: 'order.placed_v1', exposure: 'webhook' })).status).toBe(201)
    const sunset = '2999-01-01T00:00:00Z'
    const deprecated = await call('POST', '/api/operator/event_types/order.placed_v1/deprecate', operator, { reason: 'use order.created', sunset_at: sunset })
    expect(deprecated.status, JSON.stringify(deprecated.body)).toBe(200)
    expect(deprecated.body.deprecated).toEqual({ at: expect.any(String), reason: 'use order.created', sunset_at: '2999-01-01T00:00:00.000Z' })
    const again = await call('POST', '/api/operator/event_types/order.placed_v1/deprecate', operator, {})
    expect(again.body).toMatchObject({ code: 'event_type_deprecated' })

    const published = await call('POST', '/api/events', owner, { id: 'evt_v1', type: 'order.placed_v1', subject: 'order://4' })
    expect(published.status).toBe(202)
    expect(published.body.warning).toMatch(/^event type "order.placed_v1" is deprecated since .* \(use order.created\); refused from 2999-01-01/)
    expect(published.headers.get('deprecation')).toBe(`@${Math.floor(Date.parse(deprecated.body.deprecated.at) / 1000)}`)
    expect(published.headers.get('sunset')).toBe('Tue, 01 Jan 2999 00:00:00 GMT')
    await eventually('the existing `*` subscription to receive it', () => received('evt_v1'))

    const subscribe = await call('POST', '/api/admin/webhooks', owner, { url: receiver.url('/v1'), event_types: ['order.placed_v1'] })
    expect(subscribe.status).toBe(422)
    expect(subscribe.body).toMatchObject({ code: 'event_type_deprecated', field: 'event_types.0' })
    // An endpoint keeps what it has: an update that resends its globs is not refused for them.
    const patched = await call('PATCH', `/api/admin/webhooks/${allId}`, owner, { event_types: ['*'], description: 'all' })
    expect(patched.status).toBe(200)
  })
})

describe('the catalog file and replay', () => {
  it('the file\'s types were declared at start, by system; the publisher accepts them too', async () => {
    const list = await call('GET', '/api/operator/event_types', operator)
    const byName = new Map(list.body.data.map((t: { name: string }) => [t.name, t]))
    expect(byName.get('legacy.thing')).toMatchObject({ exposure: 'webhook', group: 'legacy', declared: true, builtin: false })
    expect(byName.get('booking.created')).toMatchObject({ builtin: true, declared: false })
    expect(byName.get('webhook.test')).toMatchObject({ builtin: true, reserved: true })
    const entry = await sql<{ actor: string }>`select actor from ledger where kind = 'event_type.declared' and payload ->> 'name' = 'legacy.thing'`.execute(database.db)
    expect(entry.rows).toEqual([{ actor: 'system' }])
    expect(await appPublish({ id: 'evt_legacy', type: 'legacy.thing' })).toBe('evt_legacy')
  })

  it('replay rebuilds event_types from the ledger: no differences; a row changed behind its back is one', async () => {
    const patched = await call('PATCH', '/api/operator/event_types/order.created', operator, { description: 'Placed.', schema: null })
    expect(patched.status).toBe(200)
    expect(patched.body).toMatchObject({ description: 'Placed.', schema: null })
    const replay = await call('POST', '/api/operator/ledger/replay', operator, {})
    expect(replay.status).toBe(200)
    expect(replay.body.differences).toEqual([])
    expect(replay.body.difference_counts.event_types).toEqual({ changed: 0, missing_live: 0, extra_live: 0, inconsistent: 0 })

    await bypassLedgerGuards(database.db, (trx) => sql`update event_types set exposure = 'internal' where name = 'order.created'`.execute(trx))
    const report = await ledgerReplayVerify(database.db)
    expect(report.differences).toEqual([
      expect.objectContaining({ table: 'event_types', key: 'order.created', kind: 'changed', columns: ['exposure'] }),
    ])
    await bypassLedgerGuards(database.db, (trx) => sql`update event_types set exposure = 'webhook' where name = 'order.created'`.execute(trx))
    // The publisher role reads the catalog and nothing more.
    await expect(app.query(`update ${DEFAULT_DB_SCHEMA}.event_types set exposure = 'internal'`)).rejects.toThrow(/permission denied/)
    await expect(app.query(`select count(*) from ${DEFAULT_DB_SCHEMA}.endpoints`)).rejects.toThrow(/permission denied/)
  })
})
