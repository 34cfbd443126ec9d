/**
 * The delivery engine on the time-travel harness: a real PostgreSQL, a real loopback receiver,
 * the real dispatcher stepped on a fake clock. One scenario per row of SPEC §5's table and per
 * arrow of the endpoint diagram; each ends with a ledger replay that must find no difference.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { COOL_DOWN_MS, DeliveryOutcome, RETRY_AFTER_CAP_MS } from '@hookledger/core'
import { deliveryClaim, deliverySettle, endpointDelete, endpointUpdate } from '@hookledger/store'
import {
  TestReceiver,
  engineHarness,
  type EngineHarness,
  type HarnessOptions,
} from '@hookledger/testkit'

const s = 1_000
const min = 60 * s
const day = 24 * 60 * min

let harness: EngineHarness | null = null
afterEach(async () => {
  await harness?.close()
  harness = null
})

async function start(options: HarnessOptions = {}): Promise<EngineHarness> {
  harness = await engineHarness(options)
  return harness
}

const ownerCtx = (hx: EngineHarness) => ({
  owner_id: hx.owner,
  now: hx.clock.now(),
  actor: 'owner:test',
})




/** The endpoint's own transitions (entries about the endpoint, not about one of its deliveries). */
async function endpointKinds(hx: EngineHarness, endpointId: string) {
  const rows = await hx.db
    .selectFrom('ledger')
    .select(['kind', 'payload'])
    .where('endpoint_id', '=', endpointId)
    .where('delivery_id', 'is', null)
    .orderBy('position')
    .execute()
  return rows.map((r) => r.kind)
}

async function expectReplayClean(hx: EngineHarness) {
  const report = await hx.replay()
  expect(report.differences).toEqual([])
}

describe('delivery engine (walking skeleton)', () => {
  it('fans out, claims, signs, POSTs and completes; replay finds no difference', async () => {
    const h = await start()
    const { endpoint } = await h.createEndpoint({ event_types: ['booking.*'] })
    await h.publish({ id: 'evt_a', type: 'booking.created' })
    await h.publish({ id: 'evt_b', type: 'code.issued' })
    const r = await h.step()
    expect(r).toMatchObject({ fannedOut: 2, enqueued: 1, claimed: 1, attempted: 1 })
    expect(h.receiver.requests).toHaveLength(1)
    expect(h.receiver.requests[0]!.headers['webhook-id']).toBe('evt_a')
    const rows = await h.db.selectFrom('deliveries').selectAll().execute()
    expect(rows).toMatchObject([{ endpoint_id: endpoint.id, state: 'completed', attempts: 1 }])
    const report = await h.replay()
    expect(report.differences).toEqual([])
  })
})

describe('Retry-After: pending at the time asked, no attempt spent, capped at 1 h', () => {
  it('503 with delta seconds snoozes, then the next attempt completes and clears failing', async () => {
    const h = await start()
    const { endpoint } = await h.createEndpoint()
    h.receiver.enqueue({ status: 503, headers: { 'retry-after': '120' } })
    await h.publish({ id: 'evt_ra' })
    const t0 = h.clock.now().getTime()
    expect(await h.step()).toMatchObject({ claimed: 1, attempted: 1 })

    let d = await h.deliveryOf('evt_ra')
    expect(d).toMatchObject({ state: 'pending', attempts: 0, last_status: 503, claimed_by: null })
    expect(d.next_attempt_at!.getTime() - t0).toBe(120 * s)
    expect(await h.endpointOf(endpoint.id)).toMatchObject({ failing_since: new Date(t0) })
    const ledger = await h.ledgerOf('delivery_id', d.id)
    expect(ledger.map((e) => e.kind)).toEqual([
      'delivery.enqueued',
      'delivery.claimed',
      'delivery.attempted',
      'delivery.snoozed',
    ])
    expect(ledger[2]!.payload).toMatchObject({
      attempt: 0,
      counted: false,
      outcome: 'snoozed',
      status_code: 503,
    })
    expect(ledger[3]!.payload).toEqual({
      next_attempt_at: new Date(t0 + 120 * s).toISOString(),
      retry_after_ms: 120 * s,
    })

    // not before the time asked
    h.clock.advance(120 * s - 1)
    expect(await h.step()).toMatchObject({ claimed: 0 })
    h.clock.advance(1)
    expect(await h.step()).toMatchObject({ claimed: 1 })
    d = await h.deliveryOf('evt_ra')
    expect(d).toMatchObject({ state: 'completed', attempts: 1, last_status: 204 })
    expect(await h.endpointOf(endpoint.id)).toMatchObject({ failing_since: null, enabled: true })
    expect(await endpointKinds(h, endpoint.id)).toEqual([
      'endpoint.created',
      'endpoint.failing',
      'endpoint.recovered',
    ])
    const history = await h.db
      .selectFrom('delivery_attempts')
      .select(['attempt', 'counted', 'outcome'])
      .where('delivery_id', '=', d.id)
      .orderBy('ledger_position')
      .execute()
    expect(history).toEqual([
      { attempt: 0, counted: false, outcome: 'snoozed' },
      { attempt: 1, counted: true, outcome: 'completed' },
    ])
    await expectReplayClean(h)
  })

  it.each<[string, (now: Date) => string, number]>([
    ['429, HTTP-date in 90 s', (now) => new Date(now.getTime() + 90 * s).toUTCString(), 90 * s],
    [
      '503, HTTP-date in 3 h → capped at 1 h',
      (now) => new Date(now.getTime() + 3 * 60 * min).toUTCString(),
      RETRY_AFTER_CAP_MS,
    ],
    ['429, 7200 s → capped at 1 h', () => '7200', RETRY_AFTER_CAP_MS],
    ['503, 0 s → floored at 2 s (never a tight loop)', () => '0', 2_000],
  ])('%s', async (name, header, expectedMs) => {
    const h = await start()
    const { endpoint } = await h.createEndpoint()
    const status = name.startsWith('429') ? 429 : 503
    // snoozed, then a counted failure, then snoozed again (the count must stay at 1), then 200;
    // an HTTP-date is written at the (fake) time the request arrives, as a server would
    h.receiver.answer((_req, i) =>
      i === 0 || i === 2
        ? { status, headers: { 'retry-after': header(h.clock.now()) } }
        : { status: i === 1 ? 500 : 200 },
    )
    await h.publish({ id: 'evt_ra' })
    const t0 = h.clock.now().getTime()

    await h.step() // snoozed
    let d = await h.deliveryOf('evt_ra')
    expect(d).toMatchObject({ state: 'pending', attempts: 0, last_status: status })
    expect(d.next_attempt_at!.getTime() - t0).toBe(expectedMs)

    h.clock.set(d.next_attempt_at!)
    await h.step() // 500
    d = await h.deliveryOf('evt_ra')
    expect(d).toMatchObject({ state: 'retryable', attempts: 1 })
    const t2 = d.next_attempt_at!.getTime()
    h.clock.set(t2)
    await h.step() // snoozed again
    d = await h.deliveryOf('evt_ra')
    expect(d).toMatchObject({ state: 'pending', attempts: 1 })
    expect(d.next_attempt_at!.getTime() - t2).toBe(expectedMs)

    h.clock.set(d.next_attempt_at!)
    await h.step()
    expect(await h.deliveryOf('evt_ra')).toMatchObject({ state: 'completed', attempts: 2 })
    expect(h.receiver.requests).toHaveLength(4)
    expect(await h.endpointOf(endpoint.id)).toMatchObject({ failing_since: null })
    await expectReplayClean(h)
  })
})

describe('other answers', () => {
  it.each([410, 404, 400, 422])(
    '%i → discarded (http_status) after one counted attempt; endpoint failing',
    async (status) => {
      const h = await start({ reply: { status } })
      const { endpoint } = await h.createEndpoint()
      await h.publish({ id: 'evt_4xx' })
      const t0 = h.clock.now()
      await h.step()
      const d = await h.deliveryOf('evt_4xx')
      expect(d).toMatchObject({
        state: 'discarded',
        attempts: 1,
        next_attempt_at: null,
        last_status: status,
        last_error: `HTTP ${status}`,
      })
      const ledger = await h.ledgerOf('delivery_id', d.id)
      expect(ledger.map((e) => e.kind)).toEqual([
        'delivery.enqueued',
        'delivery.claimed',
        'delivery.attempted',
        'delivery.discarded',
      ])
      expect(ledger[3]!.payload).toEqual({ reason: 'http_status', detail: String(status) })
      // every non-success marks the endpoint failing, 410 included
      expect(await h.endpointOf(endpoint.id)).toMatchObject({
        enabled: true,
        failing_since: t0,
        busy_until: null,
      })
      expect(await endpointKinds(h, endpoint.id)).toEqual(['endpoint.created', 'endpoint.failing'])
      // nothing more is tried
      h.clock.advance(day)
      expect(await h.step()).toMatchObject({ claimed: 0, settledOnClaim: 0 })
      expect(h.receiver.requests).toHaveLength(1)
      await expectReplayClean(h)
    },
  )

  it.each([408, 429, 500, 502, 503, 504])(
    '%i → retryable, attempt spent, next in 5 s',
    async (status) => {
      const h = await start({ reply: { status } })
      const { endpoint } = await h.createEndpoint()
      await h.publish({ id: 'evt_5xx' })
      const t0 = h.clock.now().getTime()
      await h.step()
      const d = await h.deliveryOf('evt_5xx')
      expect(d).toMatchObject({ state: 'retryable', attempts: 1, last_status: status })
      expect(d.next_attempt_at!.getTime() - t0).toBe(5 * s)
      expect(await h.endpointOf(endpoint.id)).toMatchObject({ failing_since: new Date(t0) })
      const ledger = await h.ledgerOf('delivery_id', d.id)
      expect(ledger.map((e) => e.kind).slice(-2)).toEqual([
        'delivery.attempted',
        'delivery.retry_scheduled',
      ])
      await expectReplayClean(h)
    },
  )

  it('a timeout (receiver slower than the transport deadline) → retryable', async () => {
    const h = await start({ transportTimeoutMs: 100, reply: { status: 200, delayMs: 400 } })
    const { endpoint } = await h.createEndpoint()
    await h.publish({ id: 'evt_slow' })
    const t0 = h.clock.now().getTime()
    await h.step()
    const d = await h.deliveryOf('evt_slow')
    expect(d).toMatchObject({
      state: 'retryable',
      attempts: 1,
      last_status: null,
      last_error: 'timeout: timed out after 100 ms',
    })
    expect(d.next_attempt_at!.getTime() - t0).toBe(5 * s)
    expect(await h.endpointOf(endpoint.id)).toMatchObject({ failing_since: new Date(t0) })
    // the receiver is fast again: the retry completes and the endpoint recovers
    h.receiver.answer({ status: 200 })
    h.clock.set(d.next_attempt_at!)
    await h.step()
    expect(await h.deliveryOf('evt_slow')).toMatchObject({ state: 'completed', attempts: 2 })
    expect(await h.endpointOf(endpoint.id)).toMatchObject({ failing_since: null })
    await expectReplayClean(h)
  })

  it('a connection failure → retryable', async () => {
    const h = await start()
    // a port nobody listens on: the receiver's, once it is closed
    const gone = await new TestReceiver().start()
    const url = gone.url()
    await gone.close()
    await h.createEndpoint({ url })
    await h.publish({ id: 'evt_refused' })
    await h.step()
    expect(await h.deliveryOf('evt_refused')).toMatchObject({
      state: 'retryable',
      attempts: 1,
      last_status: null,
      last_error: 'connection_error: ECONNREFUSED',
    })
    await expectReplayClean(h)
  })

  it('too many redirects → retryable', async () => {
    const h = await start()
    h.receiver.answer((req) => ({ status: 307, headers: { location: req.path } }))
    await h.createEndpoint()
    await h.publish({ id: 'evt_loop' })
    await h.step()
    expect(h.receiver.requests).toHaveLength(6) // the first POST and 5 redirects
    const d = await h.deliveryOf('evt_loop')
    expect(d).toMatchObject({ state: 'retryable', attempts: 1, last_status: null })
    expect(d.last_error).toMatch(/^too_many_redirects: /)
    await expectReplayClean(h)
  })

  it('a redirect to another origin → not followed with the signed headers; discarded, redirect_cross_origin, naming where', async () => {
    const h = await start()
    h.receiver.answer(() => ({ status: 302, headers: { location: 'http://127.0.0.2:9/steal' } }))
    await h.createEndpoint()
    await h.publish({ id: 'evt_away' })
    await h.step()
    expect(h.receiver.requests).toHaveLength(1)
    const d = await h.deliveryOf('evt_away')
    expect(d).toMatchObject({ state: 'discarded', attempts: 1, last_status: 302 })
    expect(d.last_error).toBe('redirect_cross_origin: HTTP 302 to http://127.0.0.2:9/steal (not followed: another origin)')
    await expectReplayClean(h)
  })

  it('an SSRF-blocked address → discarded at once, no attempt spent, no request sent', async () => {
    const h = await start()
    const { endpoint } = await h.createEndpoint({ url: 'http://10.1.2.3/hook' })
    await h.publish({ id: 'evt_ssrf' })
    await h.step()
    const d = await h.deliveryOf('evt_ssrf')
    expect(d).toMatchObject({ state: 'discarded', attempts: 0, next_attempt_at: null })
    const ledger = await h.ledgerOf('delivery_id', d.id)
    expect(ledger.map((e) => e.kind).slice(-2)).toEqual([
      'delivery.attempted',
      'delivery.discarded',
    ])
    expect(ledger.at(-2)!.payload).toMatchObject({
      counted: false,
      attempt: 0,
      address: '10.1.2.3',
    })
    expect(ledger.at(-1)!.payload).toMatchObject({ reason: 'egress_blocked' })
    expect(h.receiver.requests).toHaveLength(0)
    expect(await h.endpointOf(endpoint.id)).toMatchObject({ failing_since: h.clock.now() })
    await expectReplayClean(h)
  })
})

describe('endpoint failure state', () => {
  it('a success after failures completes the delivery and clears failing_since', async () => {
    const h = await start()
    const { endpoint } = await h.createEndpoint()
    h.receiver.enqueue({ status: 500 }, { status: 502 })
    await h.publish({ id: 'evt_flaky' })
    const t0 = h.clock.now()
    await h.step()
    for (const expected of [5 * s, 5 * min]) {
      const d = await h.deliveryOf('evt_flaky')
      expect(d.state).toBe('retryable')
      expect(d.next_attempt_at!.getTime() - h.clock.now().getTime()).toBe(expected)
      expect(await h.endpointOf(endpoint.id)).toMatchObject({ failing_since: t0 }) // not moved
      h.clock.set(d.next_attempt_at!)
      await h.step()
    }
    expect(await h.deliveryOf('evt_flaky')).toMatchObject({
      state: 'completed',
      attempts: 3,
      last_status: 204,
    })
    expect(await h.endpointOf(endpoint.id)).toMatchObject({ failing_since: null, enabled: true })
    expect(await endpointKinds(h, endpoint.id)).toEqual([
      'endpoint.created',
      'endpoint.failing',
      'endpoint.recovered',
    ])
    await expectReplayClean(h)
  })

  it('cool-down: a new delivery for a failing endpoint is scheduled 5 min out', async () => {
    const h = await start()
    const { endpoint } = await h.createEndpoint()
    h.receiver.enqueue({ status: 500 })
    await h.publish({ id: 'evt_first' })
    const t0 = h.clock.now().getTime()
    await h.step()
    // the first delivery, enqueued while the endpoint was healthy, was due at once
    const firstEnqueued = (await h.ledgerOf('delivery_id', (await h.deliveryOf('evt_first')).id))[0]!
    // (implied by its fan-out decision: ledger format 3)
    expect(firstEnqueued.payload).toEqual({
      event_type: 'booking.created',
      next_attempt_at: new Date(t0).toISOString(),
      cool_down: false,
      by_fanout: true,
    })

    h.clock.advance(1 * s)
    await h.publish({ id: 'evt_second' })
    expect(await h.step()).toMatchObject({ enqueued: 1, claimed: 0 })
    const second = await h.deliveryOf('evt_second')
    expect(second).toMatchObject({ state: 'pending', attempts: 0 })
    expect(second.next_attempt_at!.getTime() - h.clock.now().getTime()).toBe(COOL_DOWN_MS)
    expect((await h.ledgerOf('delivery_id', second.id))[0]!.payload).toMatchObject({ cool_down: true })

    // the first delivery's retry (due at +5 s) succeeds; the second still waits its 5 minutes
    h.clock.set(t0 + 5 * s)
    await h.step()
    expect(await h.deliveryOf('evt_first')).toMatchObject({ state: 'completed' })
    expect(await h.endpointOf(endpoint.id)).toMatchObject({ failing_since: null })
    expect(await h.deliveryOf('evt_second')).toMatchObject({ state: 'pending', attempts: 0 })
    h.clock.set(second.next_attempt_at!)
    await h.step()
    expect(await h.deliveryOf('evt_second')).toMatchObject({ state: 'completed', attempts: 1 })

    // healthy again: the next new delivery is due at once
    await h.publish({ id: 'evt_third' })
    await h.step()
    expect(await h.deliveryOf('evt_third')).toMatchObject({ state: 'completed' })
    await expectReplayClean(h)
  })

  it('the owner re-enabling a failing endpoint clears the failure (no cool-down after)', async () => {
    const h = await start()
    const { endpoint } = await h.createEndpoint()
    h.receiver.enqueue({ status: 500 })
    await h.publish({ id: 'evt_x' })
    await h.step()
    expect(await h.endpointOf(endpoint.id)).toMatchObject({ failing_since: h.clock.now() })

    h.clock.advance(1 * s)
    const row = await h.db
      .transaction()
      .execute((trx) => endpointUpdate(trx, ownerCtx(h), endpoint.id, { enabled: true }))
    expect(row).toMatchObject({ enabled: true, failing_since: null, disabled_reason: null })
    expect(await h.endpointOf(endpoint.id)).toMatchObject({ failing_since: null })
    expect(await endpointKinds(h, endpoint.id)).toEqual([
      'endpoint.created',
      'endpoint.failing',
      'endpoint.enabled',
    ])

    await h.publish({ id: 'evt_y' })
    await h.step()
    expect(await h.deliveryOf('evt_y')).toMatchObject({ state: 'completed', attempts: 1 })
    await expectReplayClean(h)
  })

  it('disabled → enabled only by the owner; disabled gets no new deliveries', async () => {
    const h = await start()
    const { endpoint } = await h.createEndpoint()
    h.receiver.enqueue({ status: 500 })
    await h.publish({ id: 'evt_x' })
    await h.step()
    h.clock.advance(1 * s)
    await h.db
      .transaction()
      .execute((trx) => endpointUpdate(trx, ownerCtx(h), endpoint.id, { enabled: false }))
    expect(await h.endpointOf(endpoint.id)).toMatchObject({
      enabled: false,
      disabled_reason: 'disabled_by_owner',
    })

    await h.publish({ id: 'evt_while_disabled' })
    // and hookledger's news that it went failing, which nobody here subscribed to
    expect(await h.step()).toMatchObject({ fannedOut: 2, enqueued: 0 })
    const fanout = await h.db
      .selectFrom('ledger')
      .select('payload')
      .where('kind', '=', 'fanout.decided')
      .where('event_id', '=', 'evt_while_disabled')
      .executeTakeFirstOrThrow()
    expect(fanout.payload).toMatchObject({ matched: [] })

    h.clock.advance(1 * s)
    await h.db
      .transaction()
      .execute((trx) => endpointUpdate(trx, ownerCtx(h), endpoint.id, { enabled: true }))
    expect(await h.endpointOf(endpoint.id)).toMatchObject({
      enabled: true,
      disabled_reason: null,
      failing_since: null,
    })
    await h.publish({ id: 'evt_after' })
    await h.step()
    expect(await h.deliveryOf('evt_after')).toMatchObject({ state: 'completed' })
    await expectReplayClean(h)
  })
})

describe('discarded on claim', () => {
  it('disabled endpoint: a due delivery is discarded (endpoint_disabled), nothing sent', async () => {
    const h = await start({ reply: { status: 500 } })
    const { endpoint } = await h.createEndpoint()
    await h.publish({ id: 'evt_d' })
    await h.step()
    const d0 = await h.deliveryOf('evt_d')
    expect(d0).toMatchObject({ state: 'retryable', attempts: 1 })
    await h.db
      .transaction()
      .execute((trx) => endpointUpdate(trx, ownerCtx(h), endpoint.id, { enabled: false }))

    h.clock.set(d0.next_attempt_at!)
    expect(await h.step()).toMatchObject({ claimed: 0, settledOnClaim: 1 })
    expect(h.receiver.requests).toHaveLength(1)
    const d = await h.deliveryOf('evt_d')
    expect(d).toMatchObject({
      state: 'discarded',
      attempts: 1,
      next_attempt_at: null,
      claimed_by: null,
    })
    const ledger = await h.ledgerOf('delivery_id', d.id)
    expect(ledger.map((e) => e.kind).slice(-1)).toEqual(['delivery.discarded'])
    expect(ledger.at(-1)!.payload).toEqual({
      reason: 'endpoint_disabled',
      detail: 'disabled_by_owner',
    })
    await expectReplayClean(h)
  })

  it('deleted endpoint: waiting deliveries are discarded at once (endpoint_deleted)', async () => {
    const h = await start({ reply: { status: 500 } })
    const { endpoint } = await h.createEndpoint()
    await h.publish({ id: 'evt_del' })
    await h.step()
    const r = await h.db
      .transaction()
      .execute((trx) => endpointDelete(trx, ownerCtx(h), endpoint.id))
    expect(r).toEqual({ discarded: 1 })
    const d = await h.deliveryOf('evt_del')
    expect(d).toMatchObject({ state: 'discarded', attempts: 1 })
    expect((await h.ledgerOf('delivery_id', d.id)).at(-1)!.payload).toEqual({
      reason: 'endpoint_deleted',
    })
    h.clock.advance(day)
    await h.publish({ id: 'evt_after_delete' })
    expect(await h.step()).toMatchObject({ enqueued: 0, claimed: 0, settledOnClaim: 0 })
    expect(h.receiver.requests).toHaveLength(1)
    await expectReplayClean(h)
  })

  it('deleted endpoint: a delivery in flight during the delete that fails is discarded at its next claim', async () => {
    const h = await start()
    const { endpoint } = await h.createEndpoint()
    await h.publish({ id: 'evt_inflight' })
    await h.dispatcher.fanoutOnce()
    const { claimed } = await deliveryClaim(h.db, {
      now: h.clock.now(),
      limit: 1,
      actor: 'worker:w2',
    })
    expect(claimed).toHaveLength(1)
    // the owner deletes the endpoint while the POST is in flight: nothing waiting to discard
    const r = await h.db
      .transaction()
      .execute((trx) => endpointDelete(trx, ownerCtx(h), endpoint.id))
    expect(r).toEqual({ discarded: 0 })
    // the in-flight attempt settles normally: a 500, so a retry is scheduled
    await h.db.transaction().execute((trx) =>
      deliverySettle(
        trx,
        [
          {
            delivery: claimed[0]!.delivery,
            actor: 'worker:w2',
            outcome: DeliveryOutcome.retryScheduled(
              {
                started_at: h.clock.now(),
                duration_ms: 5,
                status_code: 500,
                error: 'HTTP 500',
                signed_with: [],
              },
              5 * s,
            ),
          },
        ],
        h.clock.now(),
      ),
    )
    const d0 = await h.deliveryOf('evt_inflight')
    expect(d0).toMatchObject({ state: 'retryable', attempts: 1 })
    // when it falls due it is discarded, not left waiting forever for an endpoint that is gone
    h.clock.set(d0.next_attempt_at!)
    expect(await h.step()).toMatchObject({ claimed: 0, settledOnClaim: 1 })
    const d = await h.deliveryOf('evt_inflight')
    expect(d).toMatchObject({ state: 'discarded', attempts: 1, next_attempt_at: null })
    expect((await h.ledgerOf('delivery_id', d.id)).at(-1)!.payload).toEqual({
      reason: 'endpoint_deleted',
    })
    expect(h.receiver.requests).toHaveLength(0)
    await expectReplayClean(h)
  })

  it('event pruned past retention (30 days) → discarded (event_pruned), nothing sent', async () => {
    const h = await start({ reply: { status: 500 } })
    await h.createEndpoint()
    await h.publish({ id: 'evt_old' })
    await h.step()
    const d0 = await h.deliveryOf('evt_old')
    expect(d0).toMatchObject({ state: 'retryable', attempts: 1 })

    h.clock.advance(29 * day)
    expect(await h.dispatcher.maintenanceOnce()).toEqual({ rescued: 0, pruned: 0, retired: 0, purged: 0 })
    h.clock.advance(2 * day)
    // the event, and hookledger's news that the endpoint went failing
    expect(await h.dispatcher.maintenanceOnce()).toEqual({ rescued: 0, pruned: 2, retired: 0, purged: 0 })
    expect(await h.db.selectFrom('events').select('id').execute()).toEqual([])
    const pruned = await h.db
      .selectFrom('ledger')
      .select(['kind', 'event_id'])
      .where('kind', '=', 'event.pruned')
      .where('event_id', 'not like', 'whop_%')
      .execute()
    expect(pruned).toEqual([{ kind: 'event.pruned', event_id: 'evt_old' }])

    expect(await h.step()).toMatchObject({ claimed: 0, settledOnClaim: 1 })
    expect(h.receiver.requests).toHaveLength(1)
    const d = await h.deliveryOf('evt_old')
    expect(d).toMatchObject({ state: 'discarded', attempts: 1, next_attempt_at: null })
    expect((await h.ledgerOf('delivery_id', d.id)).map((e) => e.kind)).toEqual([
      'delivery.enqueued',
      'delivery.claimed',
      'delivery.attempted',
      'delivery.retry_scheduled',
      'delivery.discarded',
    ])
    expect((await h.ledgerOf('delivery_id', d.id)).at(-1)!.payload).toEqual({ reason: 'event_pruned' })
    await expectReplayClean(h)
  })
})
