/**
 * The delivery state machine, table by table: SPEC §5's outcome table (`classifyAttempt`), the
 * ledger entries each outcome appends (`decideDelivery`), and the projection those entries fold
 * into (`evolveDelivery`), so every arrow of the seed's "One delivery" diagram is pinned here
 * without a database.
 */
import { describe, expect, it } from 'vitest'
import type { AttemptResult } from './attempt-result.js'
import {
  MAX_ATTEMPTS,
  RETRY_AFTER_CAP_MS,
  RETRY_WINDOW_MS,
  backoffAfterAttempt,
} from './backoff.js'
import {
  BUSY_SNOOZE_MS,
  RETRY_AFTER_FLOOR_MS,
  COOL_DOWN_MS,
  DeliveryOutcome,
  JOB_TIMEOUT_MS,
  classifyAttempt,
  decideDelivery,
  isEndpointFailure,
  SNOOZE_BUDGET_DEFAULT,
  pastRetryWindow,
  type AttemptFacts,
} from './delivery-decider.js'
import type { LedgerEntry, LedgerEntryOf } from '../model/ledger-entry.js'
import { attemptRowOf, evolveDelivery, type DeliveryRow } from '../model/projections.js'
import { attemptPayloadOf } from '../model/ledger-format.js'

const s = 1_000
const min = 60 * s
const h = 60 * min

const T0 = new Date('2026-01-01T00:00:00.000Z')
const at = (ms: number) => new Date(T0.getTime() + ms)
const isoAt = (ms: number) => at(ms).toISOString()
const ACTOR = 'worker:w1'

function delivery(over: Partial<DeliveryRow> = {}): DeliveryRow {
  return {
    id: '00000000-0000-4000-8000-0000000000d1',
    owner_id: 'o1',
    endpoint_id: '00000000-0000-4000-8000-0000000000e1',
    event_id: 'evt_1',
    event_type: 'booking.created',
    state: 'running',
    run: 1,
    run_started_at: T0,
    attempts: 0,
    snoozes: 0,
    snoozed_ms: 0,
    next_attempt_at: T0,
    claimed_by: ACTOR,
    lease_until: at(JOB_TIMEOUT_MS),
    last_status: null,
    last_error: null,
    created_at: T0,
    updated_at: T0,
    ...over,
  }
}

function facts(over: Partial<AttemptFacts> = {}): AttemptFacts {
  return {
    started_at: T0,
    duration_ms: 12,
    status_code: 500,
    error: 'HTTP 500',
    signed_with: ['k1'],
    ...over,
  }
}

const response = (status: number, retryAfter: string | null = null): AttemptResult => ({
  kind: 'response',
  status,
  retryAfter,
  bodyExcerpt: '',
  durationMs: 12,
  address: '127.0.0.1',
})
const timeout: AttemptResult = { kind: 'timeout', durationMs: 10_000, error: 'timed out' }
const connectionError: AttemptResult = {
  kind: 'connection_error',
  durationMs: 3,
  error: 'ECONNREFUSED',
}
const tooManyRedirects: AttemptResult = {
  kind: 'too_many_redirects',
  durationMs: 30,
  error: 'more than 5 redirects',
}
const egressBlocked: AttemptResult = {
  kind: 'egress_blocked',
  durationMs: 1,
  address: '10.0.0.1',
  url: 'http://internal.example/hook',
  error: 'private',
}

/** An IMF-fixdate `ms` after `now`. */
const httpDate = (now: Date, ms: number) => new Date(now.getTime() + ms).toUTCString()

/** Folds entries over a row, the way the store and replay do. */
function fold(row: DeliveryRow | null, entries: readonly LedgerEntry[]): DeliveryRow | null {
  return entries.reduce<DeliveryRow | null>((r, e) => evolveDelivery(r, e), row)
}

const kinds = (entries: readonly LedgerEntry[]) => entries.map((e) => e.kind)

describe('classifyAttempt: SPEC §5 outcome table', () => {
  const now = at(0)
  const d = delivery()
  type Row = [string, AttemptResult, Partial<DeliveryOutcome> & { type: DeliveryOutcome['type'] }]
  const retry = { type: 'retry_scheduled', backoff_ms: 5 * s } as const
  it.each<Row>([
    ['200', response(200), { type: 'completed' }],
    ['201', response(201), { type: 'completed' }],
    ['204', response(204), { type: 'completed' }],
    ['299', response(299), { type: 'completed' }],
    // a 3xx reaches the decider only when the transport could not follow it
    ['300 unfollowed', response(300), retry],
    ['301 without a location', response(301), retry],
    ['304', response(304), retry],
    [
      '307 to another origin, not followed',
      { ...response(307), redirectRefused: { location: 'https://elsewhere.example/in', reason: 'cross_origin' } } as AttemptResult,
      { type: 'discarded', reason: 'redirect_cross_origin', detail: '307 → https://elsewhere.example/in', counted: true },
    ],
    [
      '400',
      response(400),
      { type: 'discarded', reason: 'http_status', detail: '400', counted: true },
    ],
    [
      '401',
      response(401),
      { type: 'discarded', reason: 'http_status', detail: '401', counted: true },
    ],
    [
      '403',
      response(403),
      { type: 'discarded', reason: 'http_status', detail: '403', counted: true },
    ],
    [
      '404',
      response(404),
      { type: 'discarded', reason: 'http_status', detail: '404', counted: true },
    ],
    [
      '410',
      response(410),
      { type: 'discarded', reason: 'http_status', detail: '410', counted: true },
    ],
    [
      '422',
      response(422),
      { type: 'discarded', reason: 'http_status', detail: '422', counted: true },
    ],
    ['408', response(408), retry],
    ['429 without Retry-After', response(429), retry],
    ['429 with an empty Retry-After (as good as none)', response(429, '  '), retry],
    ['503 without Retry-After', response(503), retry],
    ['500', response(500), retry],
    ['500 with Retry-After (only 429/503 honour it)', response(500, '60'), retry],
    ['502', response(502), retry],
    ['504', response(504), retry],
    ['599', response(599), retry],
    ['timeout', timeout, retry],
    ['connection_error', connectionError, retry],
    ['too_many_redirects', tooManyRedirects, retry],
    [
      'egress_blocked',
      egressBlocked,
      {
        type: 'discarded',
        reason: 'egress_blocked',
        counted: false,
        detail: '10.0.0.1 (http://internal.example/hook)',
      },
    ],
  ])('%s → %o', (_name, result, expected) => {
    const f = facts()
    const outcome = classifyAttempt(d, result, f, now)
    expect(outcome).toMatchObject(expected)
    // every outcome of an attempt carries the attempt's facts
    expect(outcome).toHaveProperty('attempt', f)
  })

  describe('Retry-After on 429 and 503 snoozes without spending an attempt', () => {
    it.each<[string, number, string, number]>([
      ['429, delta seconds', 429, '120', 120 * s],
      ['503, delta seconds', 503, '30', 30 * s],
      ['503, zero (floored: never a tight loop)', 503, '0', RETRY_AFTER_FLOOR_MS],
      ['503, negative (read as now, floored)', 503, '-5', RETRY_AFTER_FLOOR_MS],
      ['429, unreadable (read as now, floored)', 429, 'soon', RETRY_AFTER_FLOOR_MS],
      ['503, fractional (unreadable, floored)', 503, '1.5', RETRY_AFTER_FLOOR_MS],
      ['429, exactly the cap', 429, '3600', RETRY_AFTER_CAP_MS],
      ['429, over the cap', 429, '3601', RETRY_AFTER_CAP_MS],
      ['503, a day (capped)', 503, '86400', RETRY_AFTER_CAP_MS],
      ['503, HTTP-date in 90 s', 503, httpDate(now, 90 * s), 90 * s],
      ['429, HTTP-date in 59 min', 429, httpDate(now, 59 * min), 59 * min],
      ['503, HTTP-date in 3 h (capped)', 503, httpDate(now, 3 * h), RETRY_AFTER_CAP_MS],
      ['429, HTTP-date in the past (floored)', 429, 'Sun, 06 Nov 1994 08:49:37 GMT', RETRY_AFTER_FLOOR_MS],
      ['503, RFC 850 date in 1 min', 503, 'Thursday, 01-Jan-26 00:01:00 GMT', min],
      ['503, asctime in 45 s', 503, 'Thu Jan  1 00:00:45 2026', 45 * s],
    ])('%s', (_name, status, header, expectedMs) => {
      const f = facts({ status_code: status })
      expect(classifyAttempt(d, response(status, header), f, now)).toEqual({
        type: 'snoozed_retry_after',
        attempt: f,
        retry_after_ms: expectedMs,
      })
    })

    it('measures an HTTP-date from the `now` it is given', () => {
      const later = at(10 * min)
      const header = httpDate(T0, 15 * min)
      expect(classifyAttempt(d, response(503, header), facts(), later)).toMatchObject({
        type: 'snoozed_retry_after',
        retry_after_ms: 5 * min,
      })
    })
  })

  it.each(Array.from({ length: MAX_ATTEMPTS - 1 }, (_, i) => i))(
    'a retryable failure after %i counted attempts schedules the next after the backoff',
    (attempts) => {
      const outcome = classifyAttempt(delivery({ attempts }), response(500), facts(), now)
      expect(outcome).toMatchObject({
        type: 'retry_scheduled',
        backoff_ms: backoffAfterAttempt(attempts + 1),
      })
    },
  )

  it.each<[string, AttemptResult]>([
    ['500', response(500)],
    ['408', response(408)],
    ['429 without Retry-After', response(429)],
    ['503 without Retry-After', response(503)],
    ['timeout', timeout],
    ['connection_error', connectionError],
    ['too_many_redirects', tooManyRedirects],
  ])('attempt 18 failing with %s → discarded (max_attempts), counted', (_name, result) => {
    const f = facts()
    expect(classifyAttempt(delivery({ attempts: MAX_ATTEMPTS - 1 }), result, f, now)).toEqual({
      type: 'discarded',
      reason: 'max_attempts',
      attempt: f,
      counted: true,
    })
  })

  it('attempt 18 succeeding → completed', () => {
    expect(
      classifyAttempt(delivery({ attempts: MAX_ATTEMPTS - 1 }), response(200), facts(), now),
    ).toMatchObject({ type: 'completed' })
  })

  it('attempt 18 answered 404 is discarded for its status, not for the budget', () => {
    expect(
      classifyAttempt(delivery({ attempts: MAX_ATTEMPTS - 1 }), response(404), facts(), now),
    ).toMatchObject({ type: 'discarded', reason: 'http_status', detail: '404' })
  })

  it('attempt 18 answered 503 with Retry-After, still inside the window, is snoozed', () => {
    const d18 = delivery({ attempts: MAX_ATTEMPTS - 1 })
    const atLast = at(RETRY_WINDOW_MS)
    expect(classifyAttempt(d18, response(503, '60'), facts(), atLast)).toMatchObject({
      type: 'snoozed_retry_after',
      retry_after_ms: 60 * s,
    })
  })

  describe('snoozes stop once the run is older than the retry window', () => {
    const d = delivery({ attempts: 3 })
    it.each<[string, number, DeliveryOutcome['type']]>([
      ['at exactly the window', RETRY_WINDOW_MS, 'snoozed_retry_after'],
      ['1 ms past the window', RETRY_WINDOW_MS + 1, 'discarded'],
      ['a day past the window', RETRY_WINDOW_MS + 24 * h, 'discarded'],
    ])('429 with Retry-After %s', (_name, ms, type) => {
      expect(classifyAttempt(d, response(429, '10'), facts(), at(ms)).type).toBe(type)
    })

    it('discards with retry_window_exceeded, keeping the answer but spending no attempt', () => {
      const f = facts({ status_code: 503 })
      expect(
        classifyAttempt(
          d,
          response(503, httpDate(at(RETRY_WINDOW_MS + 1), 60 * s)),
          f,
          at(RETRY_WINDOW_MS + 1),
        ),
      ).toEqual({ type: 'discarded', reason: 'retry_window_exceeded', attempt: f, counted: false })
    })

    it('is measured from the run start, so a redelivered run gets a fresh window', () => {
      const rerun = delivery({ attempts: 0, run: 2, run_started_at: at(10 * 24 * h) })
      expect(
        classifyAttempt(rerun, response(429, '10'), facts(), at(10 * 24 * h + 1 * h)).type,
      ).toBe('snoozed_retry_after')
    })

    it.each<[string, AttemptResult, DeliveryOutcome['type']]>([
      ['a success still completes', response(204), 'completed'],
      ['a 500 is still retried (retries are bounded by count)', response(500), 'retry_scheduled'],
      ['a 404 is still discarded for its status', response(404), 'discarded'],
    ])('past the window, %s', (_name, result, type) => {
      expect(classifyAttempt(d, result, facts(), at(RETRY_WINDOW_MS + h)).type).toBe(type)
    })
  })
})

describe('the snooze budget: Retry-After postpones a run for free only so often, and so long', () => {
  const now = at(0)
  const budget = { maxCount: 3, maxTotalMs: 10 * min }
  it.each<[string, Partial<DeliveryRow>, string, DeliveryOutcome['type'], number]>([
    ['no snoozes yet', { snoozes: 0, snoozed_ms: 0 }, '60', 'snoozed_retry_after', 60 * s],
    ['one snooze left by count', { snoozes: 2, snoozed_ms: 4 * s }, '0', 'snoozed_retry_after', RETRY_AFTER_FLOOR_MS],
    ['count spent: a counted attempt, after the backoff', { snoozes: 3, snoozed_ms: 6 * s }, '0', 'retry_scheduled', backoffAfterAttempt(3)],
    ['time spent: a counted attempt', { snoozes: 1, snoozed_ms: 10 * min }, '1', 'retry_scheduled', backoffAfterAttempt(3)],
    ['spent, asking longer than the backoff: waits what was asked', { snoozes: 3, snoozed_ms: 0 }, '3000', 'retry_scheduled', 3000 * s],
    ['spent, asking past the cap: the cap', { snoozes: 3, snoozed_ms: 0 }, '86400', 'retry_scheduled', Math.max(backoffAfterAttempt(3), RETRY_AFTER_CAP_MS)],
    ['spent, garbage: the backoff', { snoozes: 3, snoozed_ms: 0 }, 'soon', 'retry_scheduled', backoffAfterAttempt(3)],
  ])('%s', (_name, over, header, type, delayMs) => {
    const outcome = classifyAttempt(delivery({ attempts: 2, ...over }), response(429, header), facts(), now, budget)
    expect(outcome.type).toBe(type)
    expect(outcome).toMatchObject(type === 'retry_scheduled' ? { backoff_ms: delayMs } : { retry_after_ms: delayMs })
  })

  it('spent on the last attempt: discarded for max_attempts', () => {
    const d = delivery({ attempts: MAX_ATTEMPTS - 1, snoozes: 3 })
    expect(classifyAttempt(d, response(503, '0'), facts(), now, budget)).toMatchObject({ type: 'discarded', reason: 'max_attempts' })
  })

  it('a budget of zero honours no Retry-After for free', () => {
    expect(classifyAttempt(delivery(), response(503, '5'), facts(), now, { maxCount: 0, maxTotalMs: h }).type).toBe('retry_scheduled')
  })

  it('the default allows 50 snoozes or 24 h', () => {
    expect(SNOOZE_BUDGET_DEFAULT).toEqual({ maxCount: 50, maxTotalMs: 24 * h })
    expect(classifyAttempt(delivery({ snoozes: 49 }), response(429, '0'), facts(), now).type).toBe('snoozed_retry_after')
    expect(classifyAttempt(delivery({ snoozes: 50 }), response(429, '0'), facts(), now).type).toBe('retry_scheduled')
  })

  it('a receiver answering Retry-After: 0 forever costs the budget and then the 18 attempts, not 43,000 requests a day', () => {
    let row: DeliveryRow = delivery({ state: 'pending', claimed_by: null, lease_until: null })
    let clock = T0
    let requests = 0
    while (row.state !== 'discarded' && requests < 10_000) {
      row = { ...row, state: 'running' }
      requests++
      const outcome = classifyAttempt(row, response(429, '0'), facts({ started_at: clock }), clock)
      for (const e of decideDelivery(row, outcome, { now: clock, actor: ACTOR })) row = evolveDelivery(row, e)!
      clock = row.next_attempt_at ?? clock
    }
    expect(row).toMatchObject({ state: 'discarded', attempts: MAX_ATTEMPTS, snoozes: 50, snoozed_ms: 50 * RETRY_AFTER_FLOOR_MS })
    expect(requests).toBe(50 + MAX_ATTEMPTS)
  })

  it('the projection counts each snooze and its delay, and a new run starts from zero', () => {
    const d = delivery({ snoozes: 4, snoozed_ms: 9 * s })
    const [, snoozed] = decideDelivery(d, DeliveryOutcome.snoozedForRetryAfter(facts(), 30 * s), { now, actor: ACTOR })
    expect(evolveDelivery(d, snoozed!)).toMatchObject({ snoozes: 5, snoozed_ms: 39 * s })
  })
})

describe('pastRetryWindow', () => {
  it.each<[number, boolean]>([
    [0, false],
    [RETRY_WINDOW_MS - 1, false],
    [RETRY_WINDOW_MS, false],
    [RETRY_WINDOW_MS + 1, true],
  ])('%i ms after the run started → %s', (ms, expected) => {
    expect(pastRetryWindow({ run_started_at: T0 }, at(ms))).toBe(expected)
  })

  it('the window is 127 h 35 min 5 s', () => {
    expect(RETRY_WINDOW_MS).toBe(127 * h + 35 * min + 5 * s)
  })
})

describe('DeliveryOutcome constructors', () => {
  it('clamps a Retry-After snooze to [0, 1 h]', () => {
    expect(DeliveryOutcome.snoozedForRetryAfter(facts(), -10)).toMatchObject({ retry_after_ms: RETRY_AFTER_FLOOR_MS })
    expect(DeliveryOutcome.snoozedForRetryAfter(facts(), 42)).toMatchObject({ retry_after_ms: RETRY_AFTER_FLOOR_MS })
    expect(DeliveryOutcome.snoozedForRetryAfter(facts(), 2_500)).toMatchObject({ retry_after_ms: 2_500 })
    expect(DeliveryOutcome.snoozedForRetryAfter(facts(), 2 * h)).toMatchObject({
      retry_after_ms: RETRY_AFTER_CAP_MS,
    })
  })

  it('counts a discard only when an attempt was made, unless told otherwise', () => {
    expect(DeliveryOutcome.discarded('endpoint_disabled')).toEqual({
      type: 'discarded',
      reason: 'endpoint_disabled',
      attempt: null,
      counted: false,
    })
    expect(DeliveryOutcome.discarded('http_status', facts())).toMatchObject({ counted: true })
    expect(DeliveryOutcome.discarded('egress_blocked', facts(), { counted: false })).toMatchObject({
      counted: false,
    })
    expect(DeliveryOutcome.discarded('http_status', facts(), { detail: '404' })).toMatchObject({
      detail: '404',
    })
    expect(DeliveryOutcome.discarded('event_pruned')).not.toHaveProperty('detail')
  })
})

describe('decideDelivery: the entries each outcome appends', () => {
  const now = at(0)
  const ctx = { now, actor: ACTOR }
  const base = (d: DeliveryRow) => ({
    occurred_at: now,
    owner_id: d.owner_id,
    endpoint_id: d.endpoint_id,
    delivery_id: d.id,
    event_id: d.event_id,
    actor: ACTOR,
  })
  // Ledger format 5: an attempt leaves out `counted: true`, `run: 1` and `error: null`.
  const attempted = (
    d: DeliveryRow,
    f: AttemptFacts,
    { counted, ...payload }: Partial<LedgerEntryOf<'delivery.attempted'>['payload']>,
  ) => ({
    ...base(d),
    kind: 'delivery.attempted',
    payload: {
      ...(d.run !== 1 ? { run: d.run } : {}),
      started_at: f.started_at.toISOString(),
      duration_ms: f.duration_ms,
      status_code: f.status_code,
      ...(f.error !== null ? { error: f.error } : {}),
      signed_with: [...f.signed_with],
      ...(counted === false ? { counted } : {}),
      ...payload,
    },
  })

  it('completed: one attempted entry (counted, attempt n+1) that completes the delivery (ledger format 2)', () => {
    const d = delivery({ attempts: 4 })
    const f = facts({ status_code: 204, error: null, address: '127.0.0.1', response_excerpt: 'ok' })
    const entries = decideDelivery(d, DeliveryOutcome.completed(f), ctx)
    expect(entries).toEqual([
      attempted(d, f, {
        attempt: 5,
        counted: true,
        outcome: 'completed',
        address: '127.0.0.1',
        response_excerpt: 'ok',
        completes: true,
      }),
    ])
  })

  it('ledger format 5: an attempt names its run, its error and that it was not counted only when they are not the usual', () => {
    const first = decideDelivery(delivery({ attempts: 0 }), DeliveryOutcome.completed(facts({ status_code: 200, error: null })), ctx)[0]!
    expect(first.payload).not.toHaveProperty('run')
    expect(first.payload).not.toHaveProperty('counted')
    expect(first.payload).not.toHaveProperty('error')
    const f = facts({ status_code: 503, error: 'HTTP 503' })
    const later = decideDelivery(delivery({ attempts: 0, run: 3 }), DeliveryOutcome.snoozedForRetryAfter(f, 90 * s), ctx)[0]!
    expect(later.payload).toMatchObject({ run: 3, counted: false, error: 'HTTP 503' })
    expect(attemptPayloadOf((first as LedgerEntryOf<'delivery.attempted'>).payload)).toMatchObject({ run: 1, counted: true, error: null })
  })

  it('retry_scheduled: attempted (counted) + retry_scheduled at now + backoff', () => {
    const d = delivery({ attempts: 2 })
    const f = facts()
    const entries = decideDelivery(d, DeliveryOutcome.retryScheduled(f, 30 * min), ctx)
    expect(entries).toEqual([
      attempted(d, f, { attempt: 3, counted: true, outcome: 'retry_scheduled' }),
      {
        ...base(d),
        kind: 'delivery.retry_scheduled',
        payload: { next_attempt_at: isoAt(30 * min), backoff_ms: 30 * min },
      },
    ])
  })

  it('snoozed_busy: one lease_busy entry 2 s out, no attempt', () => {
    const d = delivery({ attempts: 7 })
    expect(decideDelivery(d, DeliveryOutcome.snoozedForBusy(), ctx)).toEqual([
      {
        ...base(d),
        kind: 'delivery.lease_busy',
        payload: { next_attempt_at: isoAt(BUSY_SNOOZE_MS) },
      },
    ])
  })

  it('snoozed_busy past the retry window: discarded (retry_window_exceeded) instead', () => {
    const d = delivery({ attempts: 7 })
    const late = { now: at(RETRY_WINDOW_MS + 1), actor: ACTOR }
    expect(decideDelivery(d, DeliveryOutcome.snoozedForBusy(), late)).toEqual([
      {
        ...base(d),
        occurred_at: late.now,
        kind: 'delivery.discarded',
        payload: { reason: 'retry_window_exceeded' },
      },
    ])
  })

  it('snoozed_busy at exactly the retry window is still a snooze', () => {
    const entries = decideDelivery(delivery(), DeliveryOutcome.snoozedForBusy(), {
      now: at(RETRY_WINDOW_MS),
      actor: ACTOR,
    })
    expect(kinds(entries)).toEqual(['delivery.lease_busy'])
  })

  it('snoozed_retry_after: attempted (not counted, attempt stays n) + snoozed', () => {
    const d = delivery({ attempts: 3 })
    const f = facts({ status_code: 503, error: 'HTTP 503' })
    const entries = decideDelivery(d, DeliveryOutcome.snoozedForRetryAfter(f, 90 * s), ctx)
    expect(entries).toEqual([
      attempted(d, f, { attempt: 3, counted: false, outcome: 'snoozed' }),
      {
        ...base(d),
        kind: 'delivery.snoozed',
        payload: { next_attempt_at: isoAt(90 * s), retry_after_ms: 90 * s },
      },
    ])
  })

  it('discarded after an HTTP answer: attempted (counted) + discarded with the detail', () => {
    const d = delivery({ attempts: 1 })
    const f = facts({ status_code: 410, error: 'HTTP 410' })
    const entries = decideDelivery(
      d,
      DeliveryOutcome.discarded('http_status', f, { detail: '410' }),
      ctx,
    )
    expect(entries).toEqual([
      attempted(d, f, { attempt: 2, counted: true, outcome: 'discarded' }),
      { ...base(d), kind: 'delivery.discarded', payload: { reason: 'http_status', detail: '410' } },
    ])
  })

  it('discarded by the egress guard: attempted (not counted) + discarded', () => {
    const d = delivery({ attempts: 0 })
    const f = facts({
      status_code: null,
      error: 'egress_blocked: 10.0.0.1 (private)',
      address: '10.0.0.1',
    })
    const entries = decideDelivery(
      d,
      DeliveryOutcome.discarded('egress_blocked', f, { counted: false, detail: 'x' }),
      ctx,
    )
    expect(entries).toEqual([
      attempted(d, f, { attempt: 0, counted: false, outcome: 'discarded', address: '10.0.0.1' }),
      {
        ...base(d),
        kind: 'delivery.discarded',
        payload: { reason: 'egress_blocked', detail: 'x' },
      },
    ])
  })

  it('discarded after attempt 18: attempted (attempt 18) + discarded (max_attempts)', () => {
    const d = delivery({ attempts: 17 })
    const f = facts()
    const outcome = classifyAttempt(d, response(500), f, now)
    expect(decideDelivery(d, outcome, ctx)).toEqual([
      attempted(d, f, { attempt: 18, counted: true, outcome: 'discarded' }),
      { ...base(d), kind: 'delivery.discarded', payload: { reason: 'max_attempts' } },
    ])
  })

  it.each([
    ['endpoint_disabled', { detail: 'disabled_by_owner' }],
    ['endpoint_deleted', {}],
    ['event_pruned', {}],
  ] as const)('discarded on claim (%s): a single discarded entry, no attempt', (reason, extra) => {
    const d = delivery({ state: 'pending', attempts: 2, claimed_by: null, lease_until: null })
    expect(decideDelivery(d, DeliveryOutcome.discarded(reason, null, extra), ctx)).toEqual([
      { ...base(d), kind: 'delivery.discarded', payload: { reason, ...extra } },
    ])
  })

  it('interrupted: attempted (counted, outcome interrupted) + retry_scheduled', () => {
    const d = delivery({ attempts: 1 })
    const f = facts({ status_code: null, error: 'interrupted', duration_ms: JOB_TIMEOUT_MS })
    expect(decideDelivery(d, DeliveryOutcome.interrupted(f), ctx)).toEqual([
      attempted(d, f, { attempt: 2, counted: true, outcome: 'interrupted' }),
      {
        ...base(d),
        kind: 'delivery.retry_scheduled',
        payload: { next_attempt_at: isoAt(5 * min), backoff_ms: 5 * min },
      },
    ])
  })

  it('interrupted attempt 18: attempted + discarded (max_attempts)', () => {
    const d = delivery({ attempts: 17 })
    const entries = decideDelivery(d, DeliveryOutcome.interrupted(facts()), ctx)
    expect(entries.map((e) => [e.kind, e.payload])).toEqual([
      [
        'delivery.attempted',
        expect.objectContaining({ attempt: 18, outcome: 'interrupted' }),
      ],
      ['delivery.discarded', { reason: 'max_attempts' }],
    ])
  })

  it('rounds the duration and never records a negative one', () => {
    const [first] = decideDelivery(
      delivery(),
      DeliveryOutcome.completed(facts({ duration_ms: 12.6 })),
      ctx,
    )
    expect(first).toMatchObject({ payload: { duration_ms: 13 } })
    const [neg] = decideDelivery(
      delivery(),
      DeliveryOutcome.completed(facts({ duration_ms: -3 })),
      ctx,
    )
    expect(neg).toMatchObject({ payload: { duration_ms: 0 } })
  })

  it('omits an empty response excerpt and keeps a null address', () => {
    const [e] = decideDelivery(
      delivery(),
      DeliveryOutcome.completed(facts({ response_excerpt: '', address: null })),
      ctx,
    )
    expect(e!.payload).not.toHaveProperty('response_excerpt')
    expect(e!.payload).toHaveProperty('address', null)
  })

  it('records the run the attempt belongs to', () => {
    const [e] = decideDelivery(delivery({ run: 3 }), DeliveryOutcome.completed(facts()), ctx)
    expect(e).toMatchObject({ kind: 'delivery.attempted', payload: { run: 3 } })
  })
})

describe('the "One delivery" diagram, arrow by arrow (decide, then fold)', () => {
  const now = at(0)
  const ctx = { now, actor: ACTOR }
  const enqueued = (nextMs: number, coolDown: boolean): LedgerEntry => ({
    kind: 'delivery.enqueued',
    occurred_at: now,
    owner_id: 'o1',
    endpoint_id: '00000000-0000-4000-8000-0000000000e1',
    delivery_id: '00000000-0000-4000-8000-0000000000d1',
    event_id: 'evt_1',
    actor: ACTOR,
    payload: { event_type: 'booking.created', next_attempt_at: isoAt(nextMs), cool_down: coolDown },
  })
  const claimed = (row: DeliveryRow): LedgerEntry => ({
    kind: 'delivery.claimed',
    occurred_at: now,
    owner_id: row.owner_id,
    endpoint_id: row.endpoint_id,
    delivery_id: row.id,
    event_id: row.event_id,
    actor: ACTOR,
    payload: { lease_until: isoAt(JOB_TIMEOUT_MS) },
  })
  const pending = () => fold(null, [enqueued(0, false)])!
  const running = (attempts = 0) => fold({ ...pending(), attempts }, [claimed(pending())])!

  it('[*] → pending: fanout (due now)', () => {
    expect(pending()).toMatchObject({ state: 'pending', attempts: 0, next_attempt_at: T0, run: 1 })
  })

  it('[*] → pending: fanout while the endpoint is failing (5 min out)', () => {
    expect(fold(null, [enqueued(COOL_DOWN_MS, true)])).toMatchObject({
      state: 'pending',
      next_attempt_at: at(5 * min),
    })
  })

  it('pending → running: a worker claims it', () => {
    expect(running()).toMatchObject({
      state: 'running',
      claimed_by: ACTOR,
      lease_until: at(JOB_TIMEOUT_MS),
    })
  })

  type Arrow = [
    string,
    () => DeliveryRow,
    (row: DeliveryRow) => DeliveryOutcome,
    Partial<DeliveryRow>,
  ]
  it.each<Arrow>([
    [
      'running → pending: endpoint busy, snooze 2 s, no attempt',
      () => running(4),
      () => DeliveryOutcome.snoozedForBusy(),
      { state: 'pending', attempts: 4, next_attempt_at: at(2 * s), last_status: null },
    ],
    [
      'running → completed: 2xx',
      () => running(),
      (d) => classifyAttempt(d, response(204), facts({ status_code: 204, error: null }), now),
      {
        state: 'completed',
        attempts: 1,
        next_attempt_at: null,
        last_status: 204,
        last_error: null,
      },
    ],
    [
      'running → pending: 429 with Retry-After, no attempt',
      () => running(2),
      (d) =>
        classifyAttempt(
          d,
          response(429, '120'),
          facts({ status_code: 429, error: 'HTTP 429' }),
          now,
        ),
      { state: 'pending', attempts: 2, next_attempt_at: at(120 * s), last_status: 429 },
    ],
    [
      'running → pending: 503 with an HTTP-date Retry-After, capped at 1 h',
      () => running(2),
      (d) =>
        classifyAttempt(d, response(503, httpDate(now, 5 * h)), facts({ status_code: 503 }), now),
      { state: 'pending', attempts: 2, next_attempt_at: at(h), last_status: 503 },
    ],
    [
      'running → retryable: 5xx (backoff after attempt 1 is 5 s)',
      () => running(),
      (d) => classifyAttempt(d, response(502), facts({ status_code: 502, error: 'HTTP 502' }), now),
      {
        state: 'retryable',
        attempts: 1,
        next_attempt_at: at(5 * s),
        last_status: 502,
        last_error: 'HTTP 502',
      },
    ],
    [
      'running → retryable: 408 (backoff after attempt 3 is 30 min)',
      () => running(2),
      (d) => classifyAttempt(d, response(408), facts({ status_code: 408 }), now),
      { state: 'retryable', attempts: 3, next_attempt_at: at(30 * min) },
    ],
    [
      'running → retryable: 429 without Retry-After (after attempt 4: 2 h)',
      () => running(3),
      (d) => classifyAttempt(d, response(429), facts({ status_code: 429 }), now),
      { state: 'retryable', attempts: 4, next_attempt_at: at(2 * h) },
    ],
    [
      'running → retryable: timeout (after attempt 5: 5 h)',
      () => running(4),
      (d) => classifyAttempt(d, timeout, facts({ status_code: null, error: 'timeout' }), now),
      {
        state: 'retryable',
        attempts: 5,
        next_attempt_at: at(5 * h),
        last_status: null,
        last_error: 'timeout',
      },
    ],
    [
      'running → retryable: connection failure (after attempt 6: 10 h)',
      () => running(5),
      (d) => classifyAttempt(d, connectionError, facts({ status_code: null }), now),
      { state: 'retryable', attempts: 6, next_attempt_at: at(10 * h) },
    ],
    [
      'running → discarded: other 4xx',
      () => running(),
      (d) => classifyAttempt(d, response(404), facts({ status_code: 404, error: 'HTTP 404' }), now),
      {
        state: 'discarded',
        attempts: 1,
        next_attempt_at: null,
        last_status: 404,
        last_error: 'HTTP 404',
      },
    ],
    [
      'running → discarded: SSRF-blocked (no attempt spent)',
      () => running(2),
      (d) =>
        classifyAttempt(
          d,
          egressBlocked,
          facts({ status_code: null, error: 'egress_blocked' }),
          now,
        ),
      { state: 'discarded', attempts: 2, next_attempt_at: null, last_error: 'egress_blocked' },
    ],
    [
      'running → discarded: endpoint disabled',
      () => running(2),
      () => DeliveryOutcome.discarded('endpoint_disabled', null, { detail: 'disabled_by_owner' }),
      { state: 'discarded', attempts: 2, next_attempt_at: null, last_error: 'endpoint_disabled' },
    ],
    [
      'running → discarded: endpoint gone',
      () => running(),
      () => DeliveryOutcome.discarded('endpoint_deleted'),
      { state: 'discarded', attempts: 0, last_error: 'endpoint_deleted' },
    ],
    [
      'running → discarded: event pruned',
      () => running(3),
      () => DeliveryOutcome.discarded('event_pruned'),
      { state: 'discarded', attempts: 3, last_error: 'event_pruned' },
    ],
    [
      'retryable → discarded: attempt 18 fails (max_attempts)',
      () => running(17),
      (d) => classifyAttempt(d, response(500), facts({ error: 'HTTP 500' }), now),
      { state: 'discarded', attempts: 18, next_attempt_at: null, last_error: 'HTTP 500' },
    ],
    [
      'running → pending: snooze refused past the retry window → discarded',
      () => running(5),
      (d) =>
        classifyAttempt(
          d,
          response(503, '30'),
          facts({ status_code: 503, error: 'HTTP 503' }),
          at(RETRY_WINDOW_MS + 1),
        ),
      { state: 'discarded', attempts: 5, next_attempt_at: null, last_status: 503 },
    ],
    [
      'running (lost) → retryable: interrupted attempt is counted',
      () => running(1),
      () => DeliveryOutcome.interrupted(facts({ status_code: null, error: 'interrupted' })),
      { state: 'retryable', attempts: 2, next_attempt_at: at(5 * min), last_error: 'interrupted' },
    ],
  ])('%s', (_name, start, decide, expected) => {
    const row = start()
    const entries = decideDelivery(row, decide(row), ctx)
    const after = fold(row, entries)
    expect(after).toMatchObject({ ...expected, claimed_by: null, lease_until: null })
  })

  it('retryable → pending (due): the claim query takes retryable rows at next_attempt_at', () => {
    const d = running()
    const retryable = fold(
      d,
      decideDelivery(d, classifyAttempt(d, response(500), facts(), now), ctx),
    )!
    expect(retryable).toMatchObject({ state: 'retryable', next_attempt_at: at(5 * s) })
    const reclaimed = fold(retryable, [claimed(retryable)])!
    expect(reclaimed).toMatchObject({ state: 'running', attempts: 1 })
  })

  it('the whole schedule: 18 failing attempts, 17 gaps summing to the retry window, then discarded', () => {
    let row: DeliveryRow = pending()
    let clock = T0.getTime()
    const gaps: number[] = []
    for (let n = 1; n <= MAX_ATTEMPTS; n++) {
      const c = { now: new Date(clock), actor: ACTOR }
      row = fold(row, [{ ...claimed(row), occurred_at: c.now }])!
      const outcome = classifyAttempt(row, response(500), facts({ started_at: c.now }), c.now)
      row = fold(row, decideDelivery(row, outcome, c))!
      expect(row.attempts).toBe(n)
      if (n < MAX_ATTEMPTS) {
        expect(row.state).toBe('retryable')
        gaps.push(row.next_attempt_at!.getTime() - clock)
        clock = row.next_attempt_at!.getTime()
      }
    }
    expect(row).toMatchObject({ state: 'discarded', attempts: 18, next_attempt_at: null })
    expect(gaps).toEqual([
      5 * s,
      5 * min,
      30 * min,
      2 * h,
      5 * h,
      ...Array<number>(12).fill(10 * h),
    ])
    expect(clock - T0.getTime()).toBe(RETRY_WINDOW_MS)
  })
})

describe('isEndpointFailure', () => {
  it.each<[string, DeliveryOutcome, boolean]>([
    ['completed', DeliveryOutcome.completed(facts()), false],
    ['retry_scheduled', DeliveryOutcome.retryScheduled(facts(), 5 * s), true],
    [
      'snoozed for Retry-After (429/503 count)',
      DeliveryOutcome.snoozedForRetryAfter(facts(), 1),
      true,
    ],
    ['snoozed for a busy lease', DeliveryOutcome.snoozedForBusy(), false],
    [
      'discarded after an answer (410, 404…)',
      DeliveryOutcome.discarded('http_status', facts()),
      true,
    ],
    ['discarded after attempt 18', DeliveryOutcome.discarded('max_attempts', facts()), true],
    [
      'discarded by the egress guard',
      DeliveryOutcome.discarded('egress_blocked', facts(), { counted: false }),
      true,
    ],
    ['discarded on claim (disabled)', DeliveryOutcome.discarded('endpoint_disabled'), false],
    ['discarded on claim (pruned)', DeliveryOutcome.discarded('event_pruned'), false],
    [
      'interrupted (the worker was lost, not the receiver)',
      DeliveryOutcome.interrupted(facts()),
      false,
    ],
  ])('%s → %s', (_name, outcome, expected) => {
    expect(isEndpointFailure(outcome)).toBe(expected)
  })
})

describe('evolveDelivery on each entry kind', () => {
  const e = <K extends LedgerEntry['kind']>(
    kind: K,
    payload: LedgerEntryOf<K>['payload'],
    ms = 60 * s,
  ): LedgerEntry =>
    ({
      kind,
      occurred_at: at(ms),
      owner_id: 'o1',
      endpoint_id: '00000000-0000-4000-8000-0000000000e1',
      delivery_id: '00000000-0000-4000-8000-0000000000d1',
      event_id: 'evt_1',
      actor: ACTOR,
      payload,
    }) as LedgerEntry
  const attemptedPayload = (
    over: Partial<LedgerEntryOf<'delivery.attempted'>['payload']> = {},
  ) => ({
    attempt: 3,
    counted: true,
    run: 1,
    started_at: isoAt(0),
    duration_ms: 5,
    status_code: 500,
    error: 'HTTP 500',
    outcome: 'retry_scheduled' as const,
    signed_with: ['k1'],
    ...over,
  })

  it('delivery.enqueued creates the pending row', () => {
    expect(
      evolveDelivery(
        null,
        e(
          'delivery.enqueued',
          { event_type: 'x.y', next_attempt_at: isoAt(5 * min), cool_down: true },
          0,
        ),
      ),
    ).toEqual({
      id: '00000000-0000-4000-8000-0000000000d1',
      owner_id: 'o1',
      endpoint_id: '00000000-0000-4000-8000-0000000000e1',
      event_id: 'evt_1',
      event_type: 'x.y',
      state: 'pending',
      run: 1,
      run_started_at: T0,
      attempts: 0,
      snoozes: 0,
      snoozed_ms: 0,
      next_attempt_at: at(5 * min),
      claimed_by: null,
      lease_until: null,
      last_status: null,
      last_error: null,
      created_at: T0,
      updated_at: T0,
    })
  })

  it.each<LedgerEntry['kind']>([
    'delivery.claimed',
    'delivery.lease_busy',
    'delivery.attempted',
    'delivery.completed',
    'delivery.retry_scheduled',
    'delivery.snoozed',
    'delivery.discarded',
    'delivery.redelivered',
  ])('%s on a missing row leaves it missing', (kind) => {
    expect(evolveDelivery(null, { ...e('delivery.completed', {}), kind } as LedgerEntry)).toBeNull()
  })

  const row = delivery({ attempts: 2, last_status: 500, last_error: 'HTTP 500' })
  const released = { claimed_by: null, lease_until: null }

  it('delivery.claimed → running with the claim', () => {
    const pendingRow = delivery({ state: 'pending', claimed_by: null, lease_until: null })
    expect(
      evolveDelivery(
        pendingRow,
        e('delivery.claimed', { worker: 'worker:w2', lease_until: isoAt(75 * s) }),
      ),
    ).toEqual({
      ...pendingRow,
      state: 'running',
      claimed_by: 'worker:w2',
      lease_until: at(75 * s),
      updated_at: at(60 * s),
    })
  })

  it('delivery.claimed in ledger format 4 (no worker in the payload) → running, claimed by the entry\'s actor', () => {
    const pendingRow = delivery({ state: 'pending', claimed_by: null, lease_until: null })
    expect(evolveDelivery(pendingRow, e('delivery.claimed', { lease_until: isoAt(75 * s) }))).toEqual({
      ...pendingRow,
      state: 'running',
      claimed_by: ACTOR,
      lease_until: at(75 * s),
      updated_at: at(60 * s),
    })
  })

  it('delivery.lease_busy → pending at the given time, released, attempts unchanged', () => {
    expect(
      evolveDelivery(row, e('delivery.lease_busy', { next_attempt_at: isoAt(62 * s) })),
    ).toEqual({
      ...row,
      ...released,
      state: 'pending',
      next_attempt_at: at(62 * s),
      updated_at: at(60 * s),
    })
  })

  it('delivery.attempted (counted) takes the attempt number and the last status/error', () => {
    expect(evolveDelivery(row, e('delivery.attempted', attemptedPayload()))).toEqual({
      ...row,
      ...released,
      attempts: 3,
      last_status: 500,
      last_error: 'HTTP 500',
      updated_at: at(60 * s),
    })
  })

  it('delivery.attempted (not counted) keeps the attempt count', () => {
    const after = evolveDelivery(
      row,
      e(
        'delivery.attempted',
        attemptedPayload({
          attempt: 2,
          counted: false,
          status_code: 503,
          error: 'HTTP 503',
          outcome: 'snoozed',
        }),
      ),
    )
    expect(after).toMatchObject({
      attempts: 2,
      last_status: 503,
      last_error: 'HTTP 503',
      state: 'running',
    })
  })

  it('delivery.completed → completed, nothing scheduled', () => {
    expect(evolveDelivery(row, e('delivery.completed', {}))).toEqual({
      ...row,
      ...released,
      state: 'completed',
      next_attempt_at: null,
      updated_at: at(60 * s),
    })
  })

  it('delivery.retry_scheduled → retryable at the given time', () => {
    expect(
      evolveDelivery(
        row,
        e('delivery.retry_scheduled', { next_attempt_at: isoAt(65 * s), backoff_ms: 5 * s }),
      ),
    ).toEqual({
      ...row,
      ...released,
      state: 'retryable',
      next_attempt_at: at(65 * s),
      updated_at: at(60 * s),
    })
  })

  it('delivery.snoozed → pending at the given time, one more snooze in the budget', () => {
    expect(
      evolveDelivery(
        row,
        e('delivery.snoozed', { next_attempt_at: isoAt(h), retry_after_ms: h - 60 * s }),
      ),
    ).toEqual({
      ...row,
      ...released,
      state: 'pending',
      snoozes: 1,
      snoozed_ms: h - 60 * s,
      next_attempt_at: at(h),
      updated_at: at(60 * s),
    })
  })

  it('delivery.discarded → discarded, keeping the last error of the attempt', () => {
    expect(evolveDelivery(row, e('delivery.discarded', { reason: 'max_attempts' }))).toEqual({
      ...row,
      ...released,
      state: 'discarded',
      next_attempt_at: null,
      updated_at: at(60 * s),
    })
  })

  it('delivery.discarded with no attempt error records the reason as the last error', () => {
    const fresh = delivery({ state: 'pending', claimed_by: null, lease_until: null })
    expect(
      evolveDelivery(fresh, e('delivery.discarded', { reason: 'event_pruned' })),
    ).toMatchObject({
      state: 'discarded',
      last_error: 'event_pruned',
    })
  })

  it('delivery.redelivered → a new pending run with a fresh budget', () => {
    const discarded = delivery({
      state: 'discarded',
      attempts: 18,
      next_attempt_at: null,
      ...released,
    })
    expect(
      evolveDelivery(
        discarded,
        e('delivery.redelivered', {
          run: 2,
          next_attempt_at: isoAt(60 * s),
          previous_run: 1,
          previous_attempts: 18,
        }),
      ),
    ).toEqual({
      ...discarded,
      state: 'pending',
      run: 2,
      run_started_at: at(60 * s),
      attempts: 0,
      snoozes: 0,
      snoozed_ms: 0,
      next_attempt_at: at(60 * s),
      last_status: null,
      last_error: null,
      updated_at: at(60 * s),
    })
  })

  it.each<LedgerEntry['kind']>([
    'endpoint.failing',
    'endpoint.recovered',
    'endpoint.disabled',
    'endpoint.enabled',
    'endpoint.updated',
    'fanout.decided',
    'event.published',
    'event.pruned',
  ])('%s leaves the delivery row as it is (same object)', (kind) => {
    expect(evolveDelivery(row, { ...e('delivery.completed', {}), kind } as LedgerEntry)).toBe(row)
  })
})

describe('attemptRowOf', () => {
  it('turns a delivery.attempted entry into an attempt-history row keyed by position', () => {
    const d = delivery({ attempts: 1 })
    const f = facts({ signed_with: ['k1', 'k0'] })
    const [entry] = decideDelivery(d, DeliveryOutcome.retryScheduled(f, 5 * min), {
      now: T0,
      actor: ACTOR,
    })
    expect(attemptRowOf(entry!, '42')).toEqual({
      ledger_position: '42',
      delivery_id: d.id,
      attempt: 2,
      counted: true,
      run: 1,
      owner_id: 'o1',
      started_at: T0,
      duration_ms: 12,
      status_code: 500,
      error: 'HTTP 500',
      outcome: 'retry_scheduled',
      signed_with: ['k1', 'k0'],
      actor: ACTOR,
    })
  })

  it('is null for every other kind', () => {
    const entries = decideDelivery(delivery(), DeliveryOutcome.snoozedForBusy(), {
      now: T0,
      actor: ACTOR,
    })
    expect(entries.map((e) => attemptRowOf(e, '1'))).toEqual([null])
  })
})
