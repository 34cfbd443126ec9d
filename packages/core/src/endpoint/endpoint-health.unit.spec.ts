import { describe, expect, it } from 'vitest'
import { endpointHealth, healthBuckets, percentile, type HealthAttempt } from './endpoint-health.js'

const now = new Date('2026-03-01T12:34:56Z')
const ago = (minutes: number) => new Date(now.getTime() - minutes * 60_000)

describe('percentile (nearest rank)', () => {
  const cases: [string, number[], number, number | null][] = [
    ['no values', [], 50, null],
    ['one value is every percentile', [7], 95, 7],
    ['p50 of an odd count is the middle', [3, 1, 2], 50, 2],
    ['p50 of an even count is the lower middle', [4, 1, 3, 2], 50, 2],
    ['p95 of 20 values is the 19th', Array.from({ length: 20 }, (_, i) => i + 1), 95, 19],
    ['p95 of 100 values is the 95th', Array.from({ length: 100 }, (_, i) => 100 - i), 95, 95],
    ['p100 is the maximum', [5, 9, 1], 100, 9],
    ['ties', [10, 10, 10, 500], 50, 10],
  ]
  it.each(cases)('%s', (_, values, p, expected) => expect(percentile(values, p)).toBe(expected))
  it('refuses p outside (0, 100]', () => {
    expect(() => percentile([1], 0)).toThrow(RangeError)
    expect(() => percentile([1], 101)).toThrow(RangeError)
  })
})

describe('healthBuckets', () => {
  const cases: [string, '24h' | '7d', Date, number, string, string][] = [
    ['24h: 24 hourly buckets, the last the hour in progress', '24h', now, 24, '2026-02-28T13:00:00.000Z', '2026-03-01T12:00:00.000Z'],
    ['24h on the hour: that hour is the last bucket', '24h', new Date('2026-03-01T12:00:00Z'), 24, '2026-02-28T13:00:00.000Z', '2026-03-01T12:00:00.000Z'],
    ['7d: 28 buckets of 6 h at 00/06/12/18 UTC', '7d', now, 28, '2026-02-22T18:00:00.000Z', '2026-03-01T12:00:00.000Z'],
    ['7d just before a cut', '7d', new Date('2026-03-01T11:59:59.999Z'), 28, '2026-02-22T12:00:00.000Z', '2026-03-01T06:00:00.000Z'],
  ]
  it.each(cases)('%s', (_, window, at, count, first, last) => {
    const b = healthBuckets(window, at)
    expect(b).toHaveLength(count)
    expect(b[0]!.start.toISOString()).toBe(first)
    expect(b[b.length - 1]!.start.toISOString()).toBe(last)
    expect(b[b.length - 1]!.end.getTime()).toBeGreaterThan(at.getTime())
    b.slice(1).forEach((x, i) => expect(x.start).toEqual(b[i]!.end))
  })
})

describe('endpointHealth', () => {
  const a = (minutes: number, outcome: HealthAttempt['outcome'], duration_ms = 100): HealthAttempt => ({ at: ago(minutes), outcome, duration_ms })
  const cases: [string, HealthAttempt[], { attempts: number; success_rate: number | null; p50: number | null; p95: number | null; last: Partial<Record<string, number>>; lastAttempts: number }][] = [
    ['no attempts: nothing to rate', [], { attempts: 0, success_rate: null, p50: null, p95: null, last: {}, lastAttempts: 0 }],
    ['all completed', [a(1, 'completed', 40), a(2, 'completed', 60)], { attempts: 2, success_rate: 1, p50: 40, p95: 60, last: { completed: 2 }, lastAttempts: 2 }],
    ['mixed outcomes in the current hour', [a(1, 'completed'), a(2, 'retry_scheduled'), a(3, 'snoozed'), a(4, 'discarded')], { attempts: 4, success_rate: 0.25, p50: 100, p95: 100, last: { completed: 1, retry_scheduled: 1, snoozed: 1, discarded: 1 }, lastAttempts: 4 }],
    ['an earlier hour leaves the last bucket empty', [a(60, 'interrupted', 30_000)], { attempts: 1, success_rate: 0, p50: 30_000, p95: 30_000, last: {}, lastAttempts: 0 }],
    ['before the window or after now: ignored', [a(25 * 60, 'completed'), a(-1, 'completed'), a(0, 'completed', 5)], { attempts: 1, success_rate: 1, p50: 5, p95: 5, last: { completed: 1 }, lastAttempts: 1 }],
  ]
  it.each(cases)('%s', (_, attempts, x) => {
    const h = endpointHealth(attempts, '24h', now)
    expect(h.attempts).toBe(x.attempts)
    expect(h.success_rate).toBe(x.success_rate)
    expect(h.latency_ms).toEqual({ p50: x.p50, p95: x.p95 })
    const last = h.buckets[h.buckets.length - 1]!
    expect(last.attempts).toBe(x.lastAttempts)
    expect(last.outcomes).toMatchObject({ completed: 0, retry_scheduled: 0, snoozed: 0, discarded: 0, interrupted: 0, ...x.last })
    expect(h.buckets.reduce((n, b) => n + b.attempts, 0)).toBe(x.attempts)
  })
  it('puts an attempt on a bucket edge in the bucket it starts', () => {
    const edge = new Date('2026-03-01T06:00:00Z')
    const h = endpointHealth([{ at: edge, outcome: 'completed', duration_ms: 1 }], '7d', now)
    const i = h.buckets.findIndex((b) => b.start.getTime() === edge.getTime())
    expect(h.buckets[i]!.attempts).toBe(1)
    expect(h.buckets[i - 1]!.attempts).toBe(0)
    expect(h.since.toISOString()).toBe('2026-02-22T18:00:00.000Z')
    expect(h.until).toEqual(now)
  })
})
