import { describe, expect, it } from 'vitest'
import { waitingReason, type SchedulingEntry } from './waiting-reason.js'

const now = new Date('2026-03-01T12:00:00Z')
const at = (s: number) => new Date(now.getTime() + s * 1000)
const d = (over: Partial<{ state: any; attempts: number; next_attempt_at: Date | null }> = {}) => ({
  id: 'd1', state: 'pending' as const, attempts: 0, next_attempt_at: at(300), ...over,
})
const free = { busy_until: null, busy_delivery_id: null }

describe('waitingReason', () => {
  it('a strict-ordered endpoint: names the earlier delivery it waits for, whatever its own time', () => {
    expect(waitingReason(d({ next_attempt_at: now }), null, free, now, 'd0')).toEqual({ kind: 'ordering', until: null, blocked_by: 'd0' })
    expect(waitingReason(d({ state: 'completed', next_attempt_at: null }), null, free, now, 'd0')).toBeNull()
  })

  const cases: [string, ReturnType<typeof d>, SchedulingEntry | null, { busy_until: Date | null; busy_delivery_id: string | null; rate_limit?: { per_second: number; burst: number; adaptive: boolean } | null; rate_tat?: Date | null }, unknown][] = [
    ['completed: not waiting', d({ state: 'completed', next_attempt_at: null }), null, free, null],
    ['running: not waiting', d({ state: 'running' }), null, free, null],
    ['retryable after attempt 3: backoff 3 of 18', d({ state: 'retryable', attempts: 3 }), { kind: 'delivery.retry_scheduled' }, free, { kind: 'backoff', until: at(300), attempt: 3, of: 18 }],
    ['snoozed by Retry-After', d({ attempts: 1 }), { kind: 'delivery.snoozed', payload: { retry_after_ms: 300_000 } }, free, { kind: 'retry_after', until: at(300), retry_after_ms: 300_000 }],
    ['enqueued during a cool-down', d(), { kind: 'delivery.enqueued', payload: { cool_down: true } }, free, { kind: 'cool_down', until: at(300) }],
    ['held back by the rate limit (ledgered reason)', d({ next_attempt_at: at(2) }), { kind: 'delivery.lease_busy', payload: { reason: 'rate_limited' } }, free, { kind: 'rate_limited', until: at(2) }],
    ['due, but the bucket refills later', d({ next_attempt_at: now }), null, { ...free, rate_limit: { per_second: 1, burst: 1, adaptive: false }, rate_tat: at(1) }, { kind: 'rate_limited', until: at(1) }],
    ['due and the bucket allows it', d({ next_attempt_at: now }), null, { ...free, rate_limit: { per_second: 1, burst: 1, adaptive: false }, rate_tat: now }, { kind: 'due', until: null }],
    ['enqueued, due now', d({ next_attempt_at: now }), { kind: 'delivery.enqueued', payload: { cool_down: false } }, free, { kind: 'due', until: null }],
    ['pushed back by a busy lease', d({ next_attempt_at: at(2) }), { kind: 'delivery.lease_busy' }, free, { kind: 'lease_busy', until: at(2) }],
    ['another delivery holds the lease past its time', d({ next_attempt_at: now }), null, { busy_until: at(10), busy_delivery_id: 'd2' }, { kind: 'lease_busy', until: at(10) }],
    ['its own lease does not count', d({ next_attempt_at: now }), null, { busy_until: at(10), busy_delivery_id: 'd1' }, { kind: 'due', until: null }],
    ['a lease ending before its time does not count', d({ state: 'retryable', attempts: 2 }), { kind: 'delivery.retry_scheduled' }, { busy_until: at(10), busy_delivery_id: 'd2' }, { kind: 'backoff', until: at(300), attempt: 2, of: 18 }],
    ['redelivered for later', d(), { kind: 'delivery.redelivered' }, free, { kind: 'scheduled', until: at(300) }],
  ]
  it.each(cases)('%s', (_, delivery, by, endpoint, expected) => {
    expect(waitingReason(delivery, by, endpoint, now)).toEqual(expected)
  })
})
