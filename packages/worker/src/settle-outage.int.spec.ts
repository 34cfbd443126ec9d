/**
 * Outcomes survive a database outage: an attempt answered while PostgreSQL is down is kept and
 * written when it is back (once, with the real answer); a shutdown during the outage logs what
 * it could not write, by delivery id, and the rescuer's `interrupted` entry becomes the record.
 * The outage is logged once when it begins and once when it ends. A PostgreSQL of this file's
 * own, stopped and started for real.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  createEgressPolicy,
  createEventCatalog,
  createSecretBox,
  generateMasterKey,
  generateWebhookSecret,
  secretKeyId,
  systemClock,
  type Logger,
} from '@hookledger/core'
import { createDb, deliveryRescue, endpointCreate, eventInsert, migrateToLatest, type Db } from '@hookledger/store'
import { freePort, openEmbeddedDatabase, type EmbeddedDatabase } from '@hookledger/embedded'
import { TestReceiver, eventually, removeDataDir } from '@hookledger/testkit'
import { Dispatcher } from './dispatcher.js'
import { createHttpTransport } from './http-transport.js'

const root = mkdtempSync(path.join(tmpdir(), 'hookledger-settle-outage-'))
const pgDir = path.join(root, 'pg')
let port = 0
let cluster: EmbeddedDatabase | null = null
let db: Db
const receiver = new TestReceiver({ status: 200, delayMs: 800 })
const secretBox = createSecretBox(generateMasterKey())

const startCluster = async () => {
  cluster = await openEmbeddedDatabase({ dataDir: pgDir, port, settings: { fsync: 'off' } })
}
const stopCluster = async () => {
  await cluster?.stop()
  cluster = null
}

beforeAll(async () => {
  port = await freePort()
  await startCluster()
  const pool = new pg.Pool({ connectionString: cluster!.url('postgres'), max: 4, connectionTimeoutMillis: 2_000 })
  // As the composition root does: a connection the server drops must not crash the process.
  pool.on('error', () => {})
  pool.on('connect', (client) => client.on('error', () => {}))
  db = createDb(pool)
  await migrateToLatest(db)
  await receiver.start()
  const secret = generateWebhookSecret()
  await db.transaction().execute((trx) =>
    endpointCreate(trx, { owner_id: 'default', now: new Date(), actor: 'owner:test' }, {
      url: receiver.url(), description: '', event_types: ['*'], embed_id: null,
      secret_sealed: secretBox.seal(secret), secret_key_id: secretKeyId(secret),
    }),
  )
}, 60_000)

afterAll(async () => {
  await db?.destroy()
  await receiver.close()
  await stopCluster()
  removeDataDir(pgDir)
  rmSync(root, { recursive: true, force: true })
})

/** A logger keeping every line as `[msg, fields]`. */
function linesLogger() {
  const lines: [string, Record<string, unknown>][] = []
  const keep = (obj: object, msg?: string) => void lines.push([msg ?? '', obj as Record<string, unknown>])
  const logger: Logger = { debug: keep, info: keep, warn: keep, error: keep }
  return { logger, lines, count: (msg: string) => lines.filter(([m]) => m === msg).length }
}

function dispatcher(logger: Logger, shutdownGraceMs = 15_000) {
  const transport = createHttpTransport({ policy: createEgressPolicy({ allow: ['127.0.0.0/8'] }), timeoutMs: 5_000 })
  const d = new Dispatcher({
    db, clock: systemClock, transport, secretBox, catalog: createEventCatalog(), embedAdmits: async () => false,
    workerId: 'outage', logger, pollIntervalMs: 100, jobTimeoutMs: 8_000, leaseMs: 10_000, maintenanceIntervalMs: 60_000, shutdownGraceMs,
  })
  return { d, close: async () => (await d.stop(), await transport.close()) }
}

const publish = (id: string) =>
  db.transaction().execute((trx) =>
    eventInsert(trx, { owner_id: 'default', event: { id, type: 'booking.created', subject: `booking://${id}`, occurred_at: new Date(), data: {} }, now: new Date(), actor: 'system' }),
  )
const deliveryOf = (eventId: string) => db.selectFrom('deliveries').selectAll().where('event_id', '=', eventId).executeTakeFirstOrThrow()

describe('settles through a database outage', () => {
  it('an answer that arrives while the database is down is written once it is back; the outage is logged once', async () => {
    const log = linesLogger()
    const w = dispatcher(log.logger)
    await publish('evt_during')
    await w.d.start()
    const seen = receiver.requests.length
    await eventually('the POST to reach the receiver', () => receiver.requests.length > seen)
    await stopCluster()
    await eventually('the answer kept, unwritten', () => w.d.settlesPending === 1 && w.d.health.degraded)
    await startCluster()
    await eventually('the outcome written', async () => (await deliveryOf('evt_during')).state === 'completed')
    expect(receiver.requests.filter((r) => r.headers['webhook-id'] === 'evt_during')).toHaveLength(1)
    await eventually('the recovery logged', () => log.count('database:recovered') === 1)
    expect(log.count('database:degraded')).toBe(1)
    expect(log.count('producer:step_error')).toBe(0)
    const attempts = await db.selectFrom('delivery_attempts').select(['outcome', 'status_code']).where('delivery_id', '=', (await deliveryOf('evt_during')).id).execute()
    expect(attempts).toEqual([{ outcome: 'completed', status_code: 200 }])
    await w.close()
  })

  it('a shutdown while the database is down logs the unwritten outcomes by delivery id; the rescuer records them', async () => {
    const log = linesLogger()
    const w = dispatcher(log.logger, 1_000)
    await publish('evt_shutdown')
    await w.d.start()
    const seen = receiver.requests.length
    await eventually('the POST to reach the receiver', () => receiver.requests.length > seen)
    await stopCluster()
    await eventually('the answer kept, unwritten', () => w.d.settlesPending === 1)
    await w.close()
    const unwritten = log.lines.find(([m]) => m === 'completer:unwritten')
    expect(unwritten?.[1]).toMatchObject({ count: 1 })
    await startCluster()
    const d = await deliveryOf('evt_shutdown')
    expect(unwritten?.[1].delivery_ids).toEqual([d.id])
    expect(d.state).toBe('running')
    // After its lease, the rescuer takes it back: `interrupted` is the record, and it is retried.
    expect(await deliveryRescue(db, { now: new Date(d.lease_until!.getTime() + 1), leaseMs: 10_000 })).toBe(1)
    expect(await deliveryOf('evt_shutdown')).toMatchObject({ state: 'retryable', attempts: 1 })
  })
})
