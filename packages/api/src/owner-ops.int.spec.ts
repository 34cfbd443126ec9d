import { Webhook } from 'standardwebhooks'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { sql } from 'kysely'
import { createEventCatalog, DISABLE_AFTER_FAILING_MS } from '@hookledger/core'
import { eventPrune } from '@hookledger/store'
import { engineHarness, type EngineHarness, testApi, type TestApi } from '@hookledger/testkit'

let h: EngineHarness
let api: TestApi
let admin: string

beforeEach(async () => {
  // The real date: receivers verify the signature's timestamp against their own clock.
  h = await engineHarness({ start: new Date().toISOString() })
  api = testApi(h.db, { clock: h.clock, secretBox: h.secretBox })
  admin = await api.token(h.owner, ['admin', 'publish'])
})
afterEach(() => h.close())

async function createEndpoint(body: Record<string, unknown> = {}) {
  const res = await api.call('POST', '/api/admin/webhooks', {
    token: admin,
    body: { url: h.receiver.url(), event_types: ['*'], ...body },
  })
  expect(res.status, res.text).toBe(201)
  return res.body as { endpoint: { id: string }; secret: string }
}

const publish = (id: string, type = 'booking.created') =>
  api.call('POST', '/api/events', { token: admin, body: { id, type, subject: `booking://${id}` } })

const ledgerKinds = async (endpointId: string) =>
  (
    await sql<{ kind: string; actor: string; payload: Record<string, unknown> }>`
      select kind, actor, payload from ledger where endpoint_id = ${endpointId}::uuid order by position
    `.execute(h.db)
  ).rows

describe('webhooks.create', () => {
  it('answers 201 with the Location of the new endpoint, which reads it', async () => {
    const res = await api.call('POST', '/api/admin/webhooks', { token: admin, body: { url: h.receiver.url(), event_types: ['*'] } })
    expect(res.status, res.text).toBe(201)
    expect(res.headers.get('location')).toBe(`/api/admin/webhooks/${res.body.endpoint.id}`)
    const read = await api.call('GET', res.headers.get('location')!, { token: admin })
    expect(read.status).toBe(200)
    expect(read.body.id).toBe(res.body.endpoint.id)
  })
})

describe('webhooks.update', () => {
  it('enabled: false switches the endpoint off (no new deliveries); enabled: true switches it back on', async () => {
    const { endpoint } = await createEndpoint()
    const off = await api.call('PATCH', `/api/admin/webhooks/${endpoint.id}`, {
      token: admin,
      body: { enabled: false },
    })
    expect(off.status).toBe(200)
    expect(off.body).toMatchObject({
      enabled: false,
      state: 'disabled',
      disabled_reason: 'disabled_by_owner',
    })
    await publish('evt_off')
    await h.step()
    expect(h.receiver.requests).toHaveLength(0)

    const on = await api.call('PATCH', `/api/admin/webhooks/${endpoint.id}`, {
      token: admin,
      body: { enabled: true },
    })
    expect(on.body).toMatchObject({
      enabled: true,
      state: 'enabled',
      disabled_reason: null,
      failing_since: null,
    })
    await publish('evt_on')
    await h.step()
    expect(h.receiver.requests.map((r) => r.headers['webhook-id'])).toEqual(['evt_on'])
  })

  it('enabled: true clears failing_since and disabled_reason after the engine disabled it', async () => {
    h.receiver.answer({ status: 500 })
    const { endpoint } = await createEndpoint()
    await publish('evt_fail')
    await h.step()
    const failing = await api.call('GET', `/api/admin/webhooks/${endpoint.id}`, { token: admin })
    expect(failing.body.state).toBe('failing')
    expect(failing.body.failing_since).not.toBeNull()
    // Five days of failure: the next non-success disables it.
    for (let i = 0; i < 40; i++) {
      h.clock.advance(10 * 3_600_000)
      await h.step()
      if (
        h.clock.now().getTime() - Date.parse(failing.body.failing_since) >
        DISABLE_AFTER_FAILING_MS + 3_600_000
      )
        break
    }
    const disabled = await api.call('GET', `/api/admin/webhooks/${endpoint.id}`, { token: admin })
    expect(disabled.body).toMatchObject({ enabled: false, state: 'disabled' })
    expect(disabled.body.disabled_reason).toMatch(/5 days/)

    const on = await api.call('PATCH', `/api/admin/webhooks/${endpoint.id}`, {
      token: admin,
      body: { enabled: true },
    })
    expect(on.body).toMatchObject({
      enabled: true,
      state: 'enabled',
      disabled_reason: null,
      failing_since: null,
    })
    expect((await ledgerKinds(endpoint.id)).map((e) => e.kind)).toContain('endpoint.enabled')
    expect((await h.replay()).differences).toEqual([])
  })

  it('changes fields; a glob matching no webhook-visible type is refused with 422 naming event_types.N', async () => {
    const { endpoint } = await createEndpoint()
    const changed = await api.call('PATCH', `/api/admin/webhooks/${endpoint.id}`, {
      token: admin,
      body: { description: 'bookings only', event_types: ['booking.*'] },
    })
    expect(changed.body).toMatchObject({ description: 'bookings only', event_types: ['booking.*'] })
    const bad = await api.call('PATCH', `/api/admin/webhooks/${endpoint.id}`, {
      token: admin,
      body: { event_types: ['booking.*', 'invoice.paid'] },
    })
    expect(bad.status).toBe(422)
    expect(bad.body).toMatchObject({ code: 'glob_matches_nothing', field: 'event_types.1' })
    const syntax = await api.call('PATCH', `/api/admin/webhooks/${endpoint.id}`, {
      token: admin,
      body: { event_types: ['book*'] },
    })
    expect(syntax.status).toBe(400)
    expect(syntax.body.field).toBe('event_types.0')
    const privateUrl = await api.call('PATCH', `/api/admin/webhooks/${endpoint.id}`, {
      token: admin,
      body: { url: 'http://10.0.0.1/hook' },
    })
    expect(privateUrl.status).toBe(422)
    expect(privateUrl.body).toMatchObject({ code: 'egress_blocked', field: 'url' })
    const created = await api.call('POST', '/api/admin/webhooks', {
      token: admin,
      body: { url: h.receiver.url(), event_types: ['nothing.**'] },
    })
    expect(created.status).toBe(422)
    expect(created.body.field).toBe('event_types.0')
  })
})

describe('webhooks.deliveries', () => {
  it('pages newest first with an opaque cursor and filters by state', async () => {
    const { endpoint } = await createEndpoint()
    // One fan-out per event, a second apart: deliveries are ordered by when they were created.
    for (let i = 0; i < 5; i++) {
      await publish(`evt_${i}`)
      await h.dispatcher.fanoutOnce()
      h.clock.advance(1_000)
    }
    const seen: string[] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const query: string = cursor ? `?limit=2&cursor=${cursor}` : '?limit=2'
      const page = await api.call('GET', `/api/admin/webhooks/${endpoint.id}/deliveries${query}`, {
        token: admin,
      })
      expect(page.status).toBe(200)
      seen.push(...page.body.data.map((d: { event_id: string }) => d.event_id))
      cursor = page.body.next_cursor
      pages++
    } while (cursor)
    expect(pages).toBe(3)
    expect(seen).toEqual(['evt_4', 'evt_3', 'evt_2', 'evt_1', 'evt_0'])
    await h.step() // one delivery per endpoint per step: the oldest completes
    const completed = await api.call(
      'GET',
      `/api/admin/webhooks/${endpoint.id}/deliveries?state=completed`,
      { token: admin },
    )
    expect(completed.body.data.map((d: { event_id: string }) => d.event_id)).toEqual(['evt_0'])
    expect(completed.body.data[0]).toMatchObject({
      state: 'completed',
      attempts: 1,
      last_status: 204,
      link: `http://hookledger.test/ui/deliveries/${completed.body.data[0].id}`,
    })
  })
})

describe('webhooks.delete', () => {
  it('discards waiting deliveries with the reason in the ledger; later reads answer 404', async () => {
    const { endpoint } = await createEndpoint()
    await publish('evt_a')
    await publish('evt_b')
    await h.dispatcher.fanoutOnce() // enqueued, not yet attempted
    const rows = await api.call('GET', `/api/admin/webhooks/${endpoint.id}/deliveries`, {
      token: admin,
    })
    expect(rows.body.data.map((d: { state: string }) => d.state)).toEqual(['pending', 'pending'])

    const deleted = await api.call('DELETE', `/api/admin/webhooks/${endpoint.id}`, { token: admin })
    expect(deleted.status).toBe(200)
    expect(deleted.body).toEqual({ id: endpoint.id, deleted: true, discarded: 2 })
    const discards = await sql<{ payload: { reason: string } }>`
      select payload from ledger where kind = 'delivery.discarded' and endpoint_id = ${endpoint.id}::uuid
    `.execute(h.db)
    expect(discards.rows.map((r) => r.payload.reason)).toEqual([
      'endpoint_deleted',
      'endpoint_deleted',
    ])

    const deliveryId = rows.body.data[0].id
    for (const [method, path] of [
      ['GET', `/api/admin/webhooks/${endpoint.id}`],
      ['PATCH', `/api/admin/webhooks/${endpoint.id}`],
      ['DELETE', `/api/admin/webhooks/${endpoint.id}`],
      ['GET', `/api/admin/webhooks/${endpoint.id}/deliveries`],
      ['POST', `/api/admin/webhooks/${endpoint.id}/rotate_secret`],
      ['POST', `/api/admin/webhooks/${endpoint.id}/send_test`],
      ['POST', `/api/admin/webhooks/${endpoint.id}/redeliver`],
      ['GET', `/api/admin/deliveries/${deliveryId}/attempts`],
    ] as const) {
      const res = await api.call(method, path, {
        token: admin,
        ...(method === 'PATCH' ? { body: { description: 'x' } } : {}),
      })
      expect(res.status, `${method} ${path}`).toBe(404)
    }
    expect((await api.call('GET', '/api/admin/webhooks', { token: admin })).body.data).toEqual([])
    await h.step()
    expect(h.receiver.requests).toHaveLength(0)
    expect((await h.replay()).differences).toEqual([])
  })
})

describe('webhooks.rotate_secret', () => {
  it('answers the new secret once; both secrets sign during the grace window', async () => {
    const { endpoint, secret: first } = await createEndpoint()
    const rotated = await api.call('POST', `/api/admin/webhooks/${endpoint.id}/rotate_secret`, {
      token: admin,
    })
    expect(rotated.status).toBe(200)
    // public_key is the new whpk_ key of an endpoint with a v1a key pair; a v1 one has none.
    // It says when the previous secret stops signing (the grace window: 24 h by default).
    expect(rotated.body).toEqual({ secret: expect.any(String), public_key: null, previous_secret_expires_at: new Date(h.clock.now().getTime() + 24 * 3_600_000).toISOString() })
    const second = rotated.body.secret as string
    expect(second).toMatch(/^whsec_/)
    expect(second).not.toBe(first)
    await publish('evt_rotated')
    await h.step()
    const [req] = h.receiver.requests
    expect(String(req!.headers['webhook-signature']).split(' ')).toHaveLength(2)
    for (const secret of [first, second]) {
      expect(() =>
        new Webhook(secret).verify(req!.body, req!.headers as Record<string, string>),
      ).not.toThrow()
    }
    // Never shown again.
    const again = await api.call('GET', `/api/admin/webhooks/${endpoint.id}`, { token: admin })
    expect(again.text).not.toContain(second.slice(6))
  })

  it('a second rotation inside the grace window is refused, naming when it ends, unless the previous secret is expired now', async () => {
    const { endpoint, secret: first } = await createEndpoint()
    const rotate = (body?: object) =>
      api.call('POST', `/api/admin/webhooks/${endpoint.id}/rotate_secret`, { token: admin, ...(body ? { body } : {}) })
    const one = await rotate()
    const second = one.body.secret as string
    const refused = await rotate()
    expect(refused.status).toBe(409)
    expect(refused.body).toMatchObject({ code: 'rotation_in_grace', field: 'expire_previous' })
    expect(refused.body.detail).toContain(one.body.previous_secret_expires_at)
    // Forced: the first secret stops signing now; the second becomes the previous one.
    const forced = await rotate({ expire_previous: true })
    expect(forced.status).toBe(200)
    const third = forced.body.secret as string
    await publish('evt_rotated_twice')
    await h.step()
    const req = h.receiver.requests.at(-1)!
    const verifies = (secret: string) => {
      try {
        new Webhook(secret).verify(req.body, req.headers as Record<string, string>)
        return true
      } catch {
        return false
      }
    }
    expect([first, second, third].map(verifies)).toEqual([false, true, true])
    // After the window, rotating is allowed again without asking.
    h.clock.advance(24 * 3_600_000 + 1)
    expect((await rotate()).status).toBe(200)
  })
})

describe('webhooks.send_test', () => {
  it('publishes webhook.test to this endpoint only and answers its delivery id at once', async () => {
    const { endpoint, secret } = await createEndpoint({ event_types: ['booking.*'] })
    const other = await createEndpoint({ url: h.receiver.url('/other'), event_types: ['*'] })
    const sent = await api.call('POST', `/api/admin/webhooks/${endpoint.id}/send_test`, {
      token: admin,
    })
    expect(sent.status).toBe(202)
    const { event_id, delivery_id } = sent.body as { event_id: string; delivery_id: string }
    const rows = await api.call('GET', `/api/admin/webhooks/${endpoint.id}/deliveries`, {
      token: admin,
    })
    expect(rows.body.data).toEqual([
      expect.objectContaining({
        id: delivery_id,
        event_id,
        event_type: 'webhook.test',
        state: 'pending',
      }),
    ])
    expect(
      (
        await api.call('GET', `/api/admin/webhooks/${other.endpoint.id}/deliveries`, {
          token: admin,
        })
      ).body.data,
    ).toEqual([])

    await h.step()
    expect(h.receiver.requests).toHaveLength(1)
    const [req] = h.receiver.requests
    expect(req!.path).toBe('/hook')
    const event = new Webhook(secret).verify(req!.body, req!.headers as Record<string, string>)
    expect(event).toMatchObject({
      id: event_id,
      type: 'webhook.test',
      data: { endpoint_id: endpoint.id },
    })
    // The fan-out loop never sees it again; the ledger reads like any fan-out.
    expect((await h.dispatcher.fanoutOnce()).enqueued).toBe(0)
    const kinds = await sql<{
      kind: string
    }>`select kind from ledger where event_id = ${event_id} order by position`.execute(h.db)
    expect(kinds.rows.map((r) => r.kind)).toEqual([
      'event.published',
      'fanout.decided',
      'delivery.claimed',
      'delivery.attempted',
    ])
    expect((await h.replay()).differences).toEqual([])
  })

  it('refuses a disabled endpoint with 409', async () => {
    const { endpoint } = await createEndpoint()
    await api.call('PATCH', `/api/admin/webhooks/${endpoint.id}`, {
      token: admin,
      body: { enabled: false },
    })
    const res = await api.call('POST', `/api/admin/webhooks/${endpoint.id}/send_test`, {
      token: admin,
    })
    expect(res.status).toBe(409)
    expect(res.body.code).toBe('endpoint_disabled')
  })
})

describe('webhooks.redeliver', () => {
  it('receiver 404 → discarded; fixed; redeliver → delivered once; attempts show both runs with the actor', async () => {
    h.receiver.answer({ status: 404 })
    const { endpoint } = await createEndpoint()
    await publish('evt_lost')
    await h.step()
    const [discarded] = (
      await api.call('GET', `/api/admin/webhooks/${endpoint.id}/deliveries?state=discarded`, {
        token: admin,
      })
    ).body.data
    expect(discarded).toMatchObject({
      event_id: 'evt_lost',
      state: 'discarded',
      attempts: 1,
      last_status: 404,
    })

    h.receiver.answer({ status: 204 })
    const first = await api.call('POST', `/api/admin/webhooks/${endpoint.id}/redeliver`, {
      token: admin,
    })
    expect(first.body).toEqual({ requeued: 1, skipped: 0 })
    // Twice does not duplicate: the delivery is no longer discarded.
    expect(
      (await api.call('POST', `/api/admin/webhooks/${endpoint.id}/redeliver`, { token: admin }))
        .body,
    ).toEqual({ requeued: 0, skipped: 0 })
    await h.step()
    await h.step()
    expect(h.receiver.requests.map((r) => [r.headers['webhook-id'], r.path])).toEqual([
      ['evt_lost', '/hook'],
      ['evt_lost', '/hook'],
    ])

    const attempts = await api.call('GET', `/api/admin/deliveries/${discarded.id}/attempts`, {
      token: admin,
    })
    expect(attempts.status).toBe(200)
    expect(attempts.body.delivery).toMatchObject({ state: 'completed', run: 2, attempts: 1 })
    expect(
      attempts.body.data.map(
        (a: { run: number; attempt: number; status_code: number; outcome: string }) => [
          a.run,
          a.attempt,
          a.status_code,
          a.outcome,
        ],
      ),
    ).toEqual([
      [1, 1, 404, 'discarded'],
      [2, 1, 204, 'completed'],
    ])
    const tokenId = (await sql<{ id: string }>`select id from api_tokens`.execute(h.db)).rows[0]!.id
    expect(attempts.body.runs).toEqual([
      expect.objectContaining({ run: 1, actor: 'worker:harness', previous_attempts: null }),
      expect.objectContaining({ run: 2, actor: `owner:${tokenId}`, previous_attempts: 1 }),
    ])
    const link = await sql<{ payload: Record<string, unknown>; actor: string }>`
      select payload, actor from ledger where kind = 'delivery.redelivered' and delivery_id = ${discarded.id}::uuid
    `.execute(h.db)
    expect(link.rows).toEqual([
      {
        actor: `owner:${tokenId}`,
        payload: expect.objectContaining({ run: 2, previous_run: 1, previous_attempts: 1 }),
      },
    ])
    expect((await h.replay()).differences).toEqual([])
  })

  it('skips a discarded delivery whose event was pruned', async () => {
    h.receiver.answer({ status: 410 })
    const { endpoint } = await createEndpoint()
    await publish('evt_old')
    await h.step()
    h.clock.advance(20 * 24 * 3_600_000)
    await publish('evt_recent')
    await h.step()
    // The endpoint is failing: new deliveries wait out the 5-minute cool-down.
    h.clock.advance(6 * 60_000)
    await h.step()
    const discarded = await api.call(
      'GET',
      `/api/admin/webhooks/${endpoint.id}/deliveries?state=discarded`,
      { token: admin },
    )
    expect(discarded.body.data).toHaveLength(2)
    h.clock.advance(11 * 24 * 3_600_000)
    // The booking event, and hookledger's news that the endpoint went failing.
    expect(await eventPrune(h.db, { now: h.clock.now(), retentionMs: 30 * 24 * 3_600_000 })).toBe(2)
    h.receiver.answer({ status: 200 })
    // Failing for 20 days disabled it: redelivering into a disabled endpoint is refused.
    const refused = await api.call('POST', `/api/admin/webhooks/${endpoint.id}/redeliver`, {
      token: admin,
    })
    expect(refused.status).toBe(409)
    await api.call('PATCH', `/api/admin/webhooks/${endpoint.id}`, {
      token: admin,
      body: { enabled: true },
    })
    const res = await api.call('POST', `/api/admin/webhooks/${endpoint.id}/redeliver`, {
      token: admin,
    })
    expect(res.body).toEqual({ requeued: 1, skipped: 1 })
    await h.step()
    expect(h.receiver.requests.at(-1)!.headers['webhook-id']).toBe('evt_recent')
  })
})

describe('events.publish and the catalog', () => {
  it('refuses unknown types (422) and oversized data (413); the same id twice stores one event', async () => {
    const unknown = await api.call('POST', '/api/events', {
      token: admin,
      body: { type: 'invoice.paid', subject: 'x://1' },
    })
    expect(unknown.status).toBe(422)
    expect(unknown.body).toMatchObject({ code: 'unknown_event_type', field: 'type' })
    const big = await api.call('POST', '/api/events', {
      token: admin,
      body: { type: 'booking.created', subject: 'b://1', data: { blob: 'x'.repeat(17 * 1024) } },
    })
    expect(big.status).toBe(413)
    expect(big.contentType).toBe('application/problem+json')
    const huge = await api.call('POST', '/api/events', {
      token: admin,
      raw: JSON.stringify({
        type: 'booking.created',
        subject: 'b://1',
        data: { blob: 'x'.repeat(70 * 1024) },
      }),
    })
    expect(huge.status).toBe(413)
    expect((await publish('evt_same')).status).toBe(202)
    expect((await publish('evt_same')).status).toBe(200)
    const count = await sql<{ n: number }>`select count(*)::int as n from events`.execute(h.db)
    expect(count.rows[0]!.n).toBe(1)
  })

  it('an internal type from the catalog file is stored and audited but never delivered; event_types lists webhook types only', async () => {
    const catalog = createEventCatalog([
      { type: 'cache.flushed' },
      {
        type: 'invoice.paid',
        exposure: 'webhook',
        group: 'billing',
        description: 'An invoice was paid.',
      },
    ])
    const app = testApi(h.db, { clock: h.clock, secretBox: h.secretBox, catalog })
    const token = await app.token(h.owner, ['admin', 'publish'])
    const types = await app.call('GET', '/api/admin/webhooks/event_types', { token })
    const names = types.body.data.map((t: { type: string }) => t.type)
    expect(names).toHaveLength(39 + 4 + 1) // the seed, hookledger's operational events, invoice.paid
    expect(names).toContain('invoice.paid')
    expect(names).not.toContain('cache.flushed')
    expect(types.body.next_cursor).toBeNull()
    // A glob that matches only internal types matches nothing deliverable.
    const refused = await app.call('POST', '/api/admin/webhooks', {
      token,
      body: { url: h.receiver.url(), event_types: ['cache.*'] },
    })
    expect(refused.status).toBe(422)

    await app.call('POST', '/api/admin/webhooks', {
      token,
      body: { url: h.receiver.url(), event_types: ['*'] },
    })
    const res = await app.call('POST', '/api/events', {
      token,
      body: { id: 'evt_internal', type: 'cache.flushed', subject: 'cache://all' },
    })
    expect(res.status).toBe(202)
    await h.step()
    expect(h.receiver.requests).toHaveLength(0)
    const audit = await sql<{ kind: string; payload: Record<string, unknown> }>`
      select kind, payload from ledger where event_id = 'evt_internal' order by position
    `.execute(h.db)
    expect(audit.rows).toEqual([
      { kind: 'event.published', payload: { type: 'cache.flushed', subject: 'cache://all', data_sha256: expect.stringMatching(/^[0-9a-f]{64}$/) } },
      {
        kind: 'fanout.decided',
        payload: { type: 'cache.flushed', matched: [], denied: [], skipped_internal: true, enqueues: true },
      },
    ])
  })
})
