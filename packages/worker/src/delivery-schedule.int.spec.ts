/**
 * The whole 5.3-day retry schedule of one delivery, run on the fake clock against a receiver
 * that always answers 500: every gap exact, the discard after attempt 18, the endpoint failing
 * from the first failure and disabled once five days have passed, every transition in the
 * ledger, and a replay that finds no difference. Never sleeps.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { DISABLE_AFTER_FAILING_MS, MAX_ATTEMPTS, RETRY_WINDOW_MS, attemptPayloadOf } from '@hookledger/core'
import { engineHarness, type EngineHarness } from '@hookledger/testkit'

const s = 1_000
const min = 60 * s
const h = 60 * min

let harness: EngineHarness | null = null
afterEach(async () => {
  await harness?.close()
  harness = null
})


describe('the retry schedule, end to end', () => {
  it('18 attempts against a 500, 17 exact gaps, discarded (max_attempts), endpoint failing then disabled', async () => {
    const wallStart = performance.now()
    const hx = (harness = await engineHarness({ reply: { status: 500, body: 'boom' } }))
    const t0 = hx.clock.now().getTime()
    const { endpoint } = await hx.createEndpoint()
    await hx.publish({ id: 'evt_sched' })

    const expectedGaps = [5 * s, 5 * min, 30 * min, 2 * h, 5 * h, ...Array<number>(12).fill(10 * h)]
    const attemptTimes: number[] = []
    const endpointStates: { failing_since: Date | null; enabled: boolean }[] = []
    for (let n = 1; n <= MAX_ATTEMPTS; n++) {
      const r = await hx.step()
      expect(r, `step for attempt ${n}`).toMatchObject({ claimed: 1, attempted: 1 })
      attemptTimes.push(hx.clock.now().getTime())
      const d = await hx.db.selectFrom('deliveries').selectAll().executeTakeFirstOrThrow()
      const ep = await hx.db
        .selectFrom('endpoints')
        .selectAll()
        .where('id', '=', endpoint.id)
        .executeTakeFirstOrThrow()
      endpointStates.push({ failing_since: ep.failing_since, enabled: ep.enabled })
      expect(d.attempts).toBe(n)
      expect(d.last_status).toBe(500)
      expect(ep.busy_until).toBeNull() // the lease is released by the attempt
      if (n < MAX_ATTEMPTS) {
        expect(d.state).toBe('retryable')
        const gap = d.next_attempt_at!.getTime() - hx.clock.now().getTime()
        expect(gap, `gap after attempt ${n}`).toBe(expectedGaps[n - 1])
        // one millisecond early, nothing is due
        hx.clock.set(d.next_attempt_at!.getTime() - 1)
        expect(await hx.step()).toMatchObject({ claimed: 0, settledOnClaim: 0 })
        hx.clock.set(d.next_attempt_at!)
      } else {
        expect(d).toMatchObject({
          state: 'discarded',
          next_attempt_at: null,
          last_error: 'HTTP 500',
        })
      }
    }

    // the attempts happened at exactly the scheduled times: first to last = 127 h 35 min 5 s
    expect(attemptTimes.slice(1).map((t, i) => t - attemptTimes[i]!)).toEqual(expectedGaps)
    expect(attemptTimes.at(-1)! - t0).toBe(RETRY_WINDOW_MS)
    expect(RETRY_WINDOW_MS).toBe(127 * h + 35 * min + 5 * s)

    // the receiver saw 18 POSTs, all with the same webhook-id, each stamped with its own time
    expect(hx.receiver.requests).toHaveLength(MAX_ATTEMPTS)
    expect(new Set(hx.receiver.requests.map((r) => r.headers['webhook-id']))).toEqual(
      new Set(['evt_sched']),
    )
    expect(hx.receiver.requests.map((r) => Number(r.headers['webhook-timestamp']) * 1000)).toEqual(
      attemptTimes,
    )

    // endpoint: failing from the first failure on; disabled by the first failure after 5 days,
    // which is attempt 18 (attempt 17 is at 117 h 35 min 5 s, attempt 18 at 127 h 35 min 5 s)
    const t17 = attemptTimes[16]! - t0
    expect(t17).toBeLessThan(DISABLE_AFTER_FAILING_MS)
    expect(endpointStates.slice(0, 17)).toEqual(
      Array.from({ length: 17 }, () => ({ failing_since: new Date(t0), enabled: true })),
    )
    expect(endpointStates[17]).toEqual({ failing_since: new Date(t0), enabled: false })
    const ep = await hx.db
      .selectFrom('endpoints')
      .selectAll()
      .where('id', '=', endpoint.id)
      .executeTakeFirstOrThrow()
    expect(ep.disabled_reason).toBe(
      `failing since ${new Date(t0).toISOString()} (5 days without a success)`,
    )

    // the delivery's ledger: enqueued, 17 × (claimed, attempted, retry_scheduled), then the last
    const d = await hx.db.selectFrom('deliveries').selectAll().executeTakeFirstOrThrow()
    const dl = await hx.ledgerOf('delivery_id', d.id)
    expect(dl.map((e) => e.kind)).toEqual([
      'delivery.enqueued',
      ...Array.from({ length: 17 }, () => [
        'delivery.claimed',
        'delivery.attempted',
        'delivery.retry_scheduled',
      ]).flat(),
      'delivery.claimed',
      'delivery.attempted',
      'delivery.discarded',
    ])
    const attempted = dl.filter((e) => e.kind === 'delivery.attempted')
    expect(attempted.map((e) => attemptPayloadOf(e.payload as never))).toEqual(
      attemptTimes.map((t, i) =>
        expect.objectContaining({
          attempt: i + 1,
          counted: true,
          status_code: 500,
          error: 'HTTP 500',
          started_at: new Date(t).toISOString(),
          outcome: i + 1 < MAX_ATTEMPTS ? 'retry_scheduled' : 'discarded',
          response_excerpt: 'boom',
        }),
      ),
    )
    expect(attempted.every((e) => e.actor === 'worker:harness')).toBe(true)
    expect(
      dl.filter((e) => e.kind === 'delivery.retry_scheduled').map((e) => e.payload['backoff_ms']),
    ).toEqual(expectedGaps)
    expect(dl.at(-1)!.payload).toEqual({ reason: 'max_attempts' })

    // the endpoint's own transitions, in order, each at the time it happened
    const el = (await hx.ledgerOf('endpoint_id', endpoint.id)).filter(
      (e) => e.delivery_id === null,
    )
    expect(el.map((e) => [e.kind, e.occurred_at.getTime() - t0])).toEqual([
      ['endpoint.created', 0],
      ['endpoint.failing', 0],
      ['endpoint.disabled', RETRY_WINDOW_MS],
    ])
    // and the endpoint.disabled entry comes right after the discard it was decided with
    const all = await hx.ledgerOf('endpoint_id', endpoint.id)
    expect(all.slice(-3).map((e) => e.kind)).toEqual([
      'delivery.attempted',
      'delivery.discarded',
      'endpoint.disabled',
    ])

    // the per-attempt history holds the 18 counted attempts
    const history = await hx.db
      .selectFrom('delivery_attempts')
      .select(['attempt', 'counted', 'outcome', 'status_code'])
      .where('delivery_id', '=', d.id)
      .orderBy('ledger_position')
      .execute()
    expect(history.map((a) => a.attempt)).toEqual(Array.from({ length: 18 }, (_, i) => i + 1))
    expect(history.every((a) => a.counted && a.status_code === 500)).toBe(true)

    // a disabled endpoint gets no new deliveries
    await hx.publish({ id: 'evt_after_disable' })
    // with hookledger's news (failing, disabled, the delivery given up), which nobody here subscribed to
    expect(await hx.step()).toMatchObject({ enqueued: 0, claimed: 0 })
    // (The last two are published by one settle, at one time: in the name's order between them.)
    expect(await hx.db.selectFrom('events').select('type').where('type', 'like', 'webhook.%').orderBy('published_at').orderBy('type').execute()).toEqual([
      { type: 'webhook.endpoint.failing' },
      { type: 'webhook.delivery.exhausted' },
      { type: 'webhook.endpoint.disabled' },
    ])
    expect(await hx.db.selectFrom('deliveries').select('id').execute()).toHaveLength(1)

    const report = await hx.replay()
    expect(report.differences).toEqual([])
    expect(report.attempts).toBe(18)
    expect(performance.now() - wallStart).toBeLessThan(10_000)
  })

  it('snoozes stop once the delivery is older than the retry window: the next 503 discards it', async () => {
    const hx = (harness = await engineHarness())
    // evt_a always fails (500, then 503 + Retry-After once told to); evt_b succeeds
    let aReply: { status: number; headers?: Record<string, string> } = { status: 500 }
    hx.receiver.answer((req) =>
      (JSON.parse(req.body) as { id: string }).id === 'evt_b' ? { status: 204 } : aReply,
    )
    const t0 = hx.clock.now().getTime()
    const { endpoint } = await hx.createEndpoint()
    await hx.publish({ id: 'evt_a' })
    const a = async () =>
      hx.db
        .selectFrom('deliveries')
        .selectAll()
        .where('event_id', '=', 'evt_a')
        .executeTakeFirstOrThrow()
    const attemptA = async (n: number) => {
      hx.clock.set(n === 1 ? t0 : (await a()).next_attempt_at!)
      expect(await hx.step()).toMatchObject({ attempted: 1 })
    }
    for (let n = 1; n <= 15; n++) await attemptA(n)
    expect(await a()).toMatchObject({ attempts: 15, state: 'retryable' })

    // at 100 h another event succeeds, so the endpoint is not disabled before attempt 18
    hx.clock.set(t0 + 100 * h)
    await hx.publish({ id: 'evt_b' })
    await hx.step()
    const b = await hx.db
      .selectFrom('deliveries')
      .selectAll()
      .where('event_id', '=', 'evt_b')
      .executeTakeFirstOrThrow()
    hx.clock.set(b.next_attempt_at!) // cool-down: 5 min out
    await hx.step()
    const ep = () =>
      hx.db
        .selectFrom('endpoints')
        .selectAll()
        .where('id', '=', endpoint.id)
        .executeTakeFirstOrThrow()
    expect(await ep()).toMatchObject({ failing_since: null, enabled: true })

    await attemptA(16)
    await attemptA(17)
    expect(await a()).toMatchObject({ attempts: 17, state: 'retryable' })
    expect((await a()).next_attempt_at!.getTime() - t0).toBe(RETRY_WINDOW_MS)

    // attempt 18's slot, exactly at the window: a Retry-After is still honoured
    aReply = { status: 503, headers: { 'retry-after': '3600' } }
    await attemptA(18)
    let d = await a()
    expect(d).toMatchObject({ state: 'pending', attempts: 17, last_status: 503 })
    expect(d.next_attempt_at!.getTime() - t0).toBe(RETRY_WINDOW_MS + h)

    // an hour later the run is older than the window: discarded instead of snoozed again
    hx.clock.set(d.next_attempt_at!)
    await hx.step()
    d = await a()
    expect(d).toMatchObject({
      state: 'discarded',
      attempts: 17,
      next_attempt_at: null,
      last_status: 503,
    })
    const dl = await hx.ledgerOf('delivery_id', d.id)
    expect(
      dl.slice(-6).map((e) => [e.kind, e.payload['outcome'] ?? e.payload['reason'] ?? null]),
    ).toEqual([
      ['delivery.claimed', null],
      ['delivery.attempted', 'snoozed'],
      ['delivery.snoozed', null],
      ['delivery.claimed', null],
      ['delivery.attempted', 'discarded'],
      ['delivery.discarded', 'retry_window_exceeded'],
    ])
    expect(dl.at(-2)!.payload).toMatchObject({ counted: false, attempt: 17 })
    expect(hx.receiver.requests.filter((r) => r.body.includes('evt_a'))).toHaveLength(19)
    // the endpoint failed again from attempt 16 on, but not for 5 days: still enabled
    expect(await ep()).toMatchObject({
      enabled: true,
      failing_since: new Date(t0 + 107 * h + 35 * min + 5 * s),
    })

    const report = await hx.replay()
    expect(report.differences).toEqual([])
  })
})
