import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OPERATIONS } from '@hookledger/ops'
import { apiTokenCreate, apiTokenRevoke, fanoutRun } from '@hookledger/store'
import { eventually, testDatabase, type TestDatabase, dbFingerprint, testApi, type TestApi } from '@hookledger/testkit'

/** The owner resources a request can name. */
interface Ids {
  endpoint: string
  delivery: string
  embed: string
  code: string
  event: string
}

/**
 * How each op names an owner's resource: `owned` (a foreign id must read as missing), `put`
 * (the id names the caller's own object: a foreign id creates the caller's own), `none`.
 */
type Kind = 'owned' | 'put' | 'none'
interface Sample {
  kind: Kind
  method: string
  path: string
  body?: Record<string, unknown>
}

/** One valid request per operation. The test fails when an op has none (add it here). */
const SAMPLES: Record<string, (ids: Ids) => Sample> = {
  'webhooks.list': () => ({ kind: 'none', method: 'GET', path: '/api/admin/webhooks' }),
  'webhooks.create': () => ({
    kind: 'none',
    method: 'POST',
    path: '/api/admin/webhooks',
    body: { url: 'https://example.com/hook', event_types: ['*'] },
  }),
  'webhooks.event_types': () => ({
    kind: 'none',
    method: 'GET',
    path: '/api/admin/webhooks/event_types',
  }),
  'webhooks.get': (i) => ({
    kind: 'owned',
    method: 'GET',
    path: `/api/admin/webhooks/${i.endpoint}`,
  }),
  'webhooks.update': (i) => ({
    kind: 'owned',
    method: 'PATCH',
    path: `/api/admin/webhooks/${i.endpoint}`,
    body: { description: 'changed' },
  }),
  'webhooks.delete': (i) => ({
    kind: 'owned',
    method: 'DELETE',
    path: `/api/admin/webhooks/${i.endpoint}`,
  }),
  'webhooks.rotate_secret': (i) => ({
    kind: 'owned',
    method: 'POST',
    path: `/api/admin/webhooks/${i.endpoint}/rotate_secret`,
  }),
  'webhooks.send_test': (i) => ({
    kind: 'owned',
    method: 'POST',
    path: `/api/admin/webhooks/${i.endpoint}/send_test`,
  }),
  'webhooks.deliveries': (i) => ({
    kind: 'owned',
    method: 'GET',
    path: `/api/admin/webhooks/${i.endpoint}/deliveries`,
  }),
  'webhooks.stats': (i) => ({
    kind: 'owned',
    method: 'GET',
    path: `/api/admin/webhooks/${i.endpoint}/stats?window=7d`,
  }),
  'webhooks.redeliver': (i) => ({
    kind: 'owned',
    method: 'POST',
    path: `/api/admin/webhooks/${i.endpoint}/redeliver`,
  }),
  'webhooks.recover': (i) => ({
    kind: 'owned',
    method: 'POST',
    path: `/api/admin/webhooks/${i.endpoint}/recover`,
    // A dry run: the sample must leave the database as it was.
    body: { since: '2026-01-01T00:00:00Z', until: '2026-01-02T00:00:00Z', dry_run: true },
  }),
  'webhooks.attempts': (i) => ({
    kind: 'owned',
    method: 'GET',
    path: `/api/admin/deliveries/${i.delivery}/attempts`,
  }),
  'deliveries.list': (i) => ({
    kind: 'owned',
    method: 'GET',
    path: `/api/admin/deliveries?endpoint_id=${i.endpoint}`,
  }),
  'deliveries.redeliver': (i) => ({
    kind: 'owned',
    method: 'POST',
    path: `/api/admin/deliveries/${i.delivery}/redeliver`,
  }),
  'events.explain': (i) => ({
    kind: 'owned',
    method: 'GET',
    path: `/api/admin/events/${i.event}/explain`,
  }),
  'events.publish': (i) => ({
    kind: 'none',
    method: 'POST',
    path: '/api/events',
    // The same content as owner A's evt_a: a re-publication (different content is a 409 conflict).
    body: { id: i.event, type: 'booking.created', subject: 'booking://a' },
  }),
  'embeds.put': (i) => ({
    kind: 'put',
    method: 'PUT',
    path: `/api/admin/embeds/${i.embed}`,
    body: { access_code_id: i.code },
  }),
  'embeds.get': (i) => ({ kind: 'owned', method: 'GET', path: `/api/admin/embeds/${i.embed}` }),
  'embeds.delete': (i) => ({
    kind: 'owned',
    method: 'DELETE',
    path: `/api/admin/embeds/${i.embed}`,
  }),
  'access_codes.put': (i) => ({
    kind: 'put',
    method: 'PUT',
    path: `/api/admin/access_codes/${i.code}`,
    body: { role_globs: ['wiki://**'] },
  }),
  'access_codes.get': (i) => ({
    kind: 'owned',
    method: 'GET',
    path: `/api/admin/access_codes/${i.code}`,
  }),
  'access_codes.revoke': (i) => ({
    kind: 'owned',
    method: 'POST',
    path: `/api/admin/access_codes/${i.code}/revoke`,
  }),
  'event_types.list': () => ({ kind: 'none', method: 'GET', path: '/api/operator/event_types' }),
  'event_types.declare': () => ({ kind: 'none', method: 'POST', path: '/api/operator/event_types', body: { name: 'isolation.sample', exposure: 'webhook' } }),
  'event_types.update': () => ({ kind: 'none', method: 'PATCH', path: '/api/operator/event_types/isolation.sample', body: { description: 'Sampled.' } }),
  'event_types.deprecate': () => ({ kind: 'none', method: 'POST', path: '/api/operator/event_types/isolation.sample/deprecate', body: { reason: 'sampled' } }),
  'ledger.read': () => ({ kind: 'none', method: 'GET', path: '/api/operator/ledger?limit=10' }),
  'ledger.audit': (i) => ({
    kind: 'none',
    method: 'GET',
    path: `/api/operator/ledger/audit?endpoint_id=${i.endpoint}`,
  }),
  'ledger.replay': () => ({ kind: 'none', method: 'POST', path: '/api/operator/ledger/replay' }),
  'owners.list': () => ({ kind: 'none', method: 'GET', path: '/api/operator/owners' }),
  'owners.get': () => ({ kind: 'none', method: 'GET', path: '/api/operator/owners/acme' }),
  'owners.set_limits': () => ({ kind: 'none', method: 'PUT', path: '/api/operator/owners/acme/limits', body: { max_endpoints: 100 } }),
  'owners.suspend': () => ({ kind: 'none', method: 'POST', path: '/api/operator/owners/globex/suspend', body: { reason: 'sampled' } }),
  'owners.resume': () => ({ kind: 'none', method: 'POST', path: '/api/operator/owners/globex/resume' }),
  'ledger.checkpoint': () => ({ kind: 'none', method: 'POST', path: '/api/operator/ledger/checkpoints' }),
  'ledger.snapshot': () => ({ kind: 'none', method: 'POST', path: '/api/operator/ledger/snapshots' }),
  'ledger.public_key': () => ({ kind: 'none', method: 'GET', path: '/api/operator/ledger/public_key' }),
  'ledger.verify': () => ({ kind: 'none', method: 'POST', path: '/api/operator/ledger/verify', body: { chain_only: true } }),
  'ledger.export': () => ({ kind: 'none', method: 'GET', path: '/api/operator/ledger/export?from=1&to=5' }),
  'webhooks.receipt': (i) => ({ kind: 'owned', method: 'GET', path: `/api/admin/deliveries/${i.delivery}/receipt` }),
}

/** Destructive samples run last when the owner calls its own routes. */
const LAST = ['webhooks.delete', 'embeds.delete', 'access_codes.revoke']

let database: TestDatabase
let api: TestApi
let ids: Ids
const tokens = {} as Record<'a' | 'b' | 'aPublish' | 'aAdminOnly' | 'operator' | 'revoked', string>

const send = (s: Sample, token?: string) =>
  api.call(s.method, s.path, { token, ...(s.body ? { body: s.body } : {}) })

beforeAll(async () => {
  database = await testDatabase()
  api = testApi(database.db)
  tokens.a = await api.token('acme', ['admin', 'publish'])
  tokens.b = await api.token('globex', ['admin', 'publish'])
  tokens.aPublish = await api.token('acme', ['publish'])
  tokens.aAdminOnly = await api.token('acme', ['admin'])
  tokens.operator = await api.token('', ['operator'])
  const revoked = await apiTokenCreate(database.db, {
    owner_id: 'acme',
    scopes: ['admin', 'publish'],
    now: new Date(),
  })
  await apiTokenRevoke(database.db, { id: revoked.id, now: new Date() })
  tokens.revoked = revoked.token

  // Owner A's world: an endpoint with a delivery, an access code, an embed, an event.
  const created = await api.call('POST', '/api/admin/webhooks', {
    token: tokens.a,
    body: { url: 'https://example.com/a', event_types: ['*'] },
  })
  const endpoint = created.body.endpoint.id as string
  await api.call('POST', '/api/events', {
    token: tokens.a,
    body: { id: 'evt_a', type: 'booking.created', subject: 'booking://a' },
  })
  await fanoutRun(database.db, {
    now: new Date(),
    catalog: api.deps.catalog,
    embedAdmits: async () => false,
    actor: 'system',
  })
  const deliveries = await api.call('GET', `/api/admin/webhooks/${endpoint}/deliveries`, {
    token: tokens.a,
  })
  await api.call('PUT', '/api/admin/access_codes/code_a', {
    token: tokens.a,
    body: { role_globs: ['wiki://**'] },
  })
  await api.call('PUT', '/api/admin/embeds/embed_a', {
    token: tokens.a,
    body: { access_code_id: 'code_a' },
  })
  ids = {
    endpoint,
    delivery: deliveries.body.data[0].id,
    embed: 'embed_a',
    code: 'code_a',
    event: 'evt_a',
  }
})
afterAll(() => database.close())

describe('auth and isolation, walked over every route', () => {
  it('every declared operation has a sample request here', () => {
    expect(Object.keys(SAMPLES).sort()).toEqual(OPERATIONS.map((op) => op.name).sort())
  })

  it('no token or a bad or revoked token → 401; a token without the scope → 403; nothing changes', async () => {
    const before = await dbFingerprint(database.db)
    for (const op of OPERATIONS) {
      const sample = SAMPLES[op.name]!(ids)
      const what = `${op.name} ${sample.method} ${sample.path}`
      for (const token of [undefined, 'hl_not-a-token', tokens.revoked, '']) {
        const res = await send(sample, token)
        expect(res.status, what).toBe(401)
        expect(res.contentType, what).toBe('application/problem+json')
        expect(res.headers.get('www-authenticate')).toBe('Bearer')
      }
      const lacking =
        op.scope === 'admin'
          ? [tokens.aPublish, tokens.operator]
          : op.scope === 'publish'
            ? [tokens.aAdminOnly, tokens.operator]
            : [tokens.a]
      for (const token of lacking) {
        const res = await send(sample, token)
        expect(res.status, what).toBe(403)
        expect(res.body).toMatchObject({ code: 'forbidden' })
      }
    }
    expect(await dbFingerprint(database.db)).toEqual(before)
  })

  it("another owner's id answers exactly like a missing one (404), and changes nothing", async () => {
    const missing: Ids = {
      endpoint: randomUUID(),
      delivery: randomUUID(),
      embed: 'embed_missing',
      code: 'code_missing',
      event: 'evt_missing',
    }
    const before = await dbFingerprint(database.db)
    let walked = 0
    for (const op of OPERATIONS) {
      const sample = SAMPLES[op.name]!(ids)
      if (sample.kind !== 'owned') continue
      const foreign = await send(sample, tokens.b)
      const absent = await send(SAMPLES[op.name]!(missing), tokens.b)
      expect(foreign.status, op.name).toBe(404)
      expect(foreign.contentType).toBe('application/problem+json')
      expect(foreign.body, op.name).toEqual(absent.body)
      walked++
    }
    expect(walked).toBe(18)
    // An embed cannot borrow another owner's access code either.
    const borrow = await api.call('PUT', '/api/admin/embeds/borrowed', {
      token: tokens.b,
      body: { access_code_id: ids.code },
    })
    const none = await api.call('PUT', '/api/admin/embeds/borrowed', {
      token: tokens.b,
      body: { access_code_id: 'code_missing' },
    })
    expect(borrow.status).toBe(422)
    expect(borrow.body).toEqual(none.body)
    // Lists and audits only show the caller's own rows.
    expect((await api.call('GET', '/api/admin/webhooks', { token: tokens.b })).body.data).toEqual(
      [],
    )
    expect(await dbFingerprint(database.db)).toEqual(before)
  })

  it("a put or publish naming another owner's id creates the caller's own object and leaves the other's alone", async () => {
    const aCode = await api.call('GET', `/api/admin/access_codes/${ids.code}`, { token: tokens.a })
    const put = await api.call('PUT', `/api/admin/access_codes/${ids.code}`, {
      token: tokens.b,
      body: { role_globs: ['b://**'] },
    })
    expect(put.status).toBe(201)
    expect(
      (await api.call('GET', `/api/admin/access_codes/${ids.code}`, { token: tokens.a })).body,
    ).toEqual(aCode.body)
    const embed = await api.call('PUT', `/api/admin/embeds/${ids.embed}`, {
      token: tokens.b,
      body: { access_code_id: ids.code },
    })
    expect(embed.status).toBe(201)
    expect(
      (await api.call('GET', `/api/admin/embeds/${ids.embed}`, { token: tokens.a })).body
        .access_code_id,
    ).toBe('code_a')
    // Event ids are unique per owner: the same id is B's own new event, not a duplicate of A's.
    const published = await api.call('POST', '/api/events', {
      token: tokens.b,
      body: { id: ids.event, type: 'page.promoted_live', subject: 'page://b' },
    })
    expect(published.status).toBe(202)
    const events = await database.db
      .selectFrom('events')
      .select(['owner_id', 'type'])
      .where('id', '=', ids.event)
      .orderBy('owner_id')
      .execute()
    expect(events).toEqual([
      { owner_id: 'acme', type: 'booking.created' },
      { owner_id: 'globex', type: 'page.promoted_live' },
    ])
  })

  it('each sample is a valid request for its own owner (so the 404s above are about ownership)', async () => {
    const ordered = [...OPERATIONS].sort(
      (x, y) => Number(LAST.includes(x.name)) - Number(LAST.includes(y.name)),
    )
    for (const op of ordered) {
      const sample = SAMPLES[op.name]!(ids)
      const token = op.scope === 'operator' ? tokens.operator : tokens.a
      const res = await send(sample, token)
      if (op.name === 'deliveries.redeliver') {
        // Its delivery is still pending: found (so ownership is what the 404 above was about), refused.
        expect(res.status, res.text).toBe(409)
        expect(res.body).toMatchObject({ code: 'delivery_in_progress' })
        continue
      }
      expect(res.status, `${op.name}: ${res.text}`).toBeLessThan(300)
      expect(res.contentType).toMatch(/^application\/json/)
    }
    // The operator sees every owner; an owner filter narrows it.
    // The feed shows rows once every older transaction of the shared cluster has ended.
    const feed = await eventually('the feed to show globex', async () => {
      const answer = await api.call('GET', '/api/operator/ledger?limit=200&owner_id=globex', { token: tokens.operator })
      return answer.body.data.length > 0 && answer
    })
    expect(feed.body.data.length).toBeGreaterThan(0)
    expect(new Set(feed.body.data.map((e: { owner_id: string }) => e.owner_id))).toEqual(
      new Set(['globex']),
    )
  })
})
