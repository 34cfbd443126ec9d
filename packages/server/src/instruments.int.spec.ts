/**
 * The operator's instruments on a running service (in-process, real PostgreSQL, real loopback
 * receiver): `/metrics` parses as Prometheus text, its counters grow by exactly the deliveries
 * made, it needs an operator token; `/readyz` reports its checks; endpoint transitions and the
 * summary are logged.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { encodeMasterKey, generateMasterKey } from '@hookledger/core'
import { apiTokenCreate } from '@hookledger/store'
import { TestReceiver, eventually, testDatabase, type TestDatabase } from '@hookledger/testkit'
import { loadConfig } from './config.js'
import { createLogger, startService, type RunningService } from './service.js'

let database: TestDatabase
let service: RunningService
let receiver: TestReceiver
const dataDir = mkdtempSync(path.join(tmpdir(), 'hookledger-instruments-'))
let operator = ''
let owner = ''

beforeAll(async () => {
  database = await testDatabase()
  receiver = await new TestReceiver({ status: 204 }).start()
  const config = loadConfig({
    DATABASE_URL: database.url,
    PORT: '0',
    HOOKLEDGER_DATA_DIR: dataDir,
    HOOKLEDGER_MASTER_KEY: encodeMasterKey(generateMasterKey()),
    HOOKLEDGER_EGRESS_ALLOW: '127.0.0.0/8',
    LOG_LEVEL: 'silent',
  })
  service = await startService(config, { role: 'all', log: createLogger(config), out: () => {} })
  operator = (await apiTokenCreate(database.db, { owner_id: '*', scopes: ['operator'], now: new Date() })).token
  owner = (await apiTokenCreate(database.db, { owner_id: 'acme', scopes: ['admin', 'publish'], now: new Date() })).token
})
afterAll(async () => {
  await service?.stop()
  await receiver?.close()
  await database?.close()
  rmSync(dataDir, { recursive: true, force: true })
})

/** The Prometheus text exposition format (0.0.4), line by line: every line must be one of these. */
const HELP = /^# HELP [a-zA-Z_:][a-zA-Z0-9_:]* .*$/
const TYPE = /^# TYPE [a-zA-Z_:][a-zA-Z0-9_:]* (counter|gauge|histogram|summary|untyped)$/
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*",?)*\})? (-?[0-9.eE+-]+|[Nn]a[Nn]|[+-]Inf)( -?\d+)?$/

function parseMetrics(text: string): Map<string, number> {
  const samples = new Map<string, number>()
  for (const line of text.split('\n')) {
    if (line === '') continue
    if (line.startsWith('#')) {
      expect(HELP.test(line) || TYPE.test(line), line).toBe(true)
      continue
    }
    const m = SAMPLE.exec(line)
    expect(m, line).not.toBeNull()
    samples.set(m![1]! + (m![2] ?? ''), Number(m![3]))
  }
  return samples
}

const scrape = async () => {
  const res = await fetch(`${service.url}/metrics`, { headers: { authorization: `Bearer ${operator}` } })
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toContain('text/plain')
  return parseMetrics(await res.text())
}
const completed = (m: Map<string, number>) => m.get('hookledger_deliveries_total{outcome="completed",reason=""}') ?? 0

describe('GET /metrics', () => {
  it('answers 401 without a token and 403 to an owner token', async () => {
    expect((await fetch(`${service.url}/metrics`)).status).toBe(401)
    const res = await fetch(`${service.url}/metrics`, { headers: { authorization: `Bearer ${owner}` } })
    expect(res.status).toBe(403)
    expect(res.headers.get('content-type')).toContain('application/problem+json')
  })

  it('parses as Prometheus text, and its delivery counter grows by exactly the deliveries made', async () => {
    const before = await scrape()
    expect(before.has('process_cpu_user_seconds_total')).toBe(true)
    expect(before.get('hookledger_endpoints{state="enabled"}')).toBeDefined()
    const auth = { authorization: `Bearer ${owner}`, 'content-type': 'application/json' }
    for (let i = 0; i < 3; i++) {
      const r = await fetch(`${service.url}/api/admin/webhooks`, { method: 'POST', headers: auth, body: JSON.stringify({ url: receiver.url(`/e${i}`), event_types: ['booking.*'] }) })
      expect(r.status).toBe(201)
    }
    const events = 7
    for (let i = 0; i < events; i++) {
      const r = await fetch(`${service.url}/api/events`, { method: 'POST', headers: auth, body: JSON.stringify({ id: `evt_m${i}`, type: 'booking.created', subject: `booking://${i}` }) })
      expect(r.status).toBe(202)
    }
    const made = 3 * events
    await eventually('the counter to reach the deliveries made', async () => completed(await scrape()) - completed(before) >= made)
    const after = await scrape()
    expect(completed(after) - completed(before)).toBe(made)
    expect(receiver.requests).toHaveLength(made)
    expect(after.get('hookledger_attempt_duration_seconds_count{status_class="2xx"}')).toBe(made)
    expect(after.get('hookledger_settle_batch_size_count')!).toBeGreaterThan(0)
    // Published events and the API's answers are counted too (neither was before).
    const count = (m: Map<string, number>, name: string) => m.get(name) ?? 0
    expect(count(after, 'hookledger_events_published_total') - count(before, 'hookledger_events_published_total')).toBe(events)
    expect(count(after, 'hookledger_deliveries_enqueued_total') - count(before, 'hookledger_deliveries_enqueued_total')).toBe(made)
    expect(count(after, 'hookledger_http_requests_total{route="/api/events",status="202"}') - count(before, 'hookledger_http_requests_total{route="/api/events",status="202"}')).toBe(events)
    expect(count(after, 'hookledger_http_requests_total{route="/api/admin/webhooks",status="201"}')).toBeGreaterThanOrEqual(3)
    expect(count(after, 'hookledger_http_requests_total{route="/metrics",status="403"}')).toBeGreaterThanOrEqual(1)
    // Labels are route patterns, never paths: no id ever appears in one.
    expect([...after.keys()].filter((k) => k.startsWith('hookledger_http_requests_total')).every((k) => !/[0-9a-f]{8}-[0-9a-f]{4}/.test(k))).toBe(true)
    // Gauges that need a query are read at most every few seconds (cached), not per scrape.
    const enabled = (m: Map<string, number>) => m.get('hookledger_endpoints{state="enabled"}')!
    const latest = await eventually('the cached gauges to move', async () => {
      const m = await scrape()
      return enabled(m) - enabled(before) === 3 && m
    })
    expect(latest.get('hookledger_ledger_position')!).toBeGreaterThan(before.get('hookledger_ledger_position')!)
    expect(latest.get('hookledger_deliveries_due')).toBe(0)
    // No projection snapshot yet (a worker takes its first a minute in): its age says so.
    expect(latest.get('hookledger_ledger_snapshot_age_seconds')).toBe(-1)
    expect(latest.get('hookledger_ledger_snapshot_position')).toBe(0)
  })
})

describe('GET /readyz', () => {
  it('answers 200 with each check named while the database, the schema and the dispatcher are fine', async () => {
    const res = await fetch(`${service.url}/readyz`)
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ ok: true, checks: { database: { ok: true }, migrations: { ok: true }, dispatcher: { ok: true } } })
    expect((await fetch(`${service.url}/healthz`)).status).toBe(200)
  })
})

describe('a worker-only process', () => {
  it('serves its own /metrics, /readyz and /healthz on HOOKLEDGER_METRICS_PORT (its counters live only in it)', async () => {
    const config = loadConfig({
      DATABASE_URL: database.url,
      HOOKLEDGER_DATA_DIR: dataDir,
      HOOKLEDGER_MASTER_KEY: encodeMasterKey(generateMasterKey()),
      HOOKLEDGER_METRICS_PORT: '0',
      LOG_LEVEL: 'silent',
    })
    const lines: string[] = []
    const worker = await startService(config, { role: 'worker', log: createLogger(config), out: (l) => lines.push(l) })
    try {
      const url = /instruments on (http:\/\/\S+) /.exec(lines.join('\n'))?.[1]
      expect(url, lines.join('\n')).toBeDefined()
      expect((await fetch(`${url}/healthz`)).status).toBe(200)
      expect(await (await fetch(`${url}/readyz`)).json()).toMatchObject({ ok: true, checks: { dispatcher: { ok: true } } })
      expect((await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${owner}` } })).status).toBe(403)
      const res = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${operator}` } })
      expect(res.status).toBe(200)
      expect(await res.text()).toContain('hookledger_deliveries_total')
      // The API's routes are not served there.
      expect((await fetch(`${url}/api/admin/webhooks`)).status).toBe(404)
    } finally {
      await worker.stop()
    }
  })
})
