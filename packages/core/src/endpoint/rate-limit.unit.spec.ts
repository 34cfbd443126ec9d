import { describe, expect, it } from 'vitest'
import { adaptedRateAfter, rateAllows, rateReadyAt, rateTatAfterSend, type RateBucket } from './rate-limit.js'

const T0 = new Date('2026-01-01T00:00:00.000Z')
const at = (ms: number) => new Date(T0.getTime() + ms)
const bucket = (per_second: number, burst: number, tatMs: number | null, adapted: number | null = null): RateBucket => ({
  rate_limit: { per_second, burst, adaptive: adapted !== null },
  rate_tat: tatMs === null ? null : at(tatMs),
  rate_adapted_per_second: adapted,
})

describe('the token bucket (GCRA): whether a send at now is allowed, and the bucket after it', () => {
  it.each<[string, RateBucket, number, boolean, number | null, number | null]>([
    // name, bucket, now (ms), allowed, ready at (ms), tat after a send (ms)
    ['no limit: always, nothing kept', { rate_limit: null, rate_tat: null, rate_adapted_per_second: null }, 0, true, null, null],
    ['a fresh bucket: allowed, one interval spent', bucket(50, 1, null), 0, true, null, 20],
    ['50/s burst 1: the next send waits 20 ms', bucket(50, 1, 20), 10, false, 20, 40],
    ['50/s burst 1: at 20 ms it goes', bucket(50, 1, 20), 20, true, 20, 40],
    ['burst 3 at 10/s: three at once, then one per 100 ms', bucket(10, 3, 200), 0, true, 0, 300],
    ['burst 3 at 10/s: the fourth at once waits', bucket(10, 3, 300), 0, false, 100, 400],
    ['an idle bucket refills (a tat long past counts from now)', bucket(10, 3, 300), 5000, true, 100, 5100],
    ['a send 5 ms late keeps the 20 ms schedule (next at 40, not 45)', bucket(50, 1, 20), 25, true, 20, 40],
    ['a send a whole interval late starts again from now', bucket(50, 1, 20), 41, true, 20, 61],
    ['a non-integer interval rounds up (3/s → 334 ms)', bucket(3, 1, null), 0, true, null, 334],
    ['adaptive: the lowered rate is in force (50 → 25/s: 40 ms)', bucket(50, 1, 40, 25), 20, false, 40, 80],
  ])('%s', (_name, b, nowMs, allowed, readyMs, tatMs) => {
    expect(rateAllows(b, at(nowMs))).toBe(allowed)
    expect(rateReadyAt(b)?.getTime() ?? null).toBe(readyMs === null ? null : at(readyMs).getTime())
    expect(rateTatAfterSend(b, at(nowMs))?.getTime() ?? null).toBe(tatMs === null ? null : at(tatMs).getTime())
  })

  it('never lets more than burst + rate × t through in any window t (a second of tries every ms)', () => {
    let b = bucket(50, 5, null)
    const sent: number[] = []
    for (let ms = 0; ms < 3000; ms++) {
      if (rateAllows(b, at(ms))) {
        sent.push(ms)
        b = { ...b, rate_tat: rateTatAfterSend(b, at(ms)) }
      }
    }
    for (const start of sent) {
      const inWindow = sent.filter((s) => s >= start && s < start + 1000).length
      expect(inWindow).toBeLessThanOrEqual(5 + 50)
    }
    expect(sent.length).toBe(5 + Math.floor(2999 / 20))
  })

  it('late claims (0–15 ms after the bucket allows) still get the rate, and never more than burst + rate + 1 a second', () => {
    let b = bucket(50, 1, null)
    const sent: number[] = []
    let seed = 7
    const jitter = () => ((seed = (seed * 48271) % 2147483647) % 16)
    for (let ms = 0; ms < 10_000; ) {
      sent.push(ms)
      b = { ...b, rate_tat: rateTatAfterSend(b, at(ms)) }
      ms = Math.max(ms + 1, rateReadyAt(b)!.getTime() - T0.getTime() + jitter())
    }
    for (const start of sent) expect(sent.filter((s) => s >= start && s < start + 1000).length).toBeLessThanOrEqual(1 + 50 + 1)
    expect(sent.length).toBeGreaterThanOrEqual(0.98 * 500)
  })
})

describe('an adaptive limit: 429/503 halve the rate in force, 2xx bring it back slowly', () => {
  const adaptive = (per_second: number, adapted: number | null): RateBucket => ({ rate_limit: { per_second, burst: 1, adaptive: true }, rate_tat: null, rate_adapted_per_second: adapted })
  const cases: [string, RateBucket, number | null, number | null | undefined][] = [
    ['429 at the configured rate: half', adaptive(10, null), 429, 5],
    ['503 again: half of that', adaptive(10, 5), 503, 2.5],
    ['never below a hundredth of the configured rate', adaptive(10, 0.1), 429, undefined],
    ['near the floor it halves to the floor', adaptive(10, 0.15), 429, 0.1],
    ['2xx on an adapted rate: 5 % more plus 1 % of the configured', adaptive(10, 5), 204, 5 * 1.05 + 0.1],
    ['2xx that reaches the configured rate: back to it (null)', adaptive(10, 9.8), 200, null],
    ['2xx at the configured rate: nothing to change', adaptive(10, null), 200, undefined],
    ['a 500 changes nothing', adaptive(10, 5), 500, undefined],
    ['no answer (connection error) changes nothing', adaptive(10, 5), null, undefined],
    ['not adaptive: never', { rate_limit: { per_second: 10, burst: 1, adaptive: false }, rate_tat: null, rate_adapted_per_second: null }, 429, undefined],
    ['no limit: never', { rate_limit: null, rate_tat: null, rate_adapted_per_second: null }, 429, undefined],
  ]
  it.each(cases)('%s', (_name, b, status, want) => {
    const got = adaptedRateAfter(b, status)
    if (typeof want === 'number') expect(got).toBeCloseTo(want, 9)
    else expect(got).toBe(want)
  })
})
