import { describe, expect, it } from 'vitest'
import {
  backoffAfterAttempt,
  cappedRetryAfter,
  LATER_RETRY_GAP_MS,
  MAX_ATTEMPTS,
  parseRetryAfter,
  RETRY_AFTER_CAP_MS,
  RETRY_SCHEDULE_MS,
  RETRY_WINDOW_MS,
} from './backoff.js'

const s = 1_000
const min = 60 * s
const h = 60 * min

describe('backoffAfterAttempt', () => {
  it.each([
    [1, 5 * s],
    [2, 5 * min],
    [3, 30 * min],
    [4, 2 * h],
    [5, 5 * h],
    [6, 10 * h],
    [7, 10 * h],
    [8, 10 * h],
    [9, 10 * h],
    [10, 10 * h],
    [11, 10 * h],
    [12, 10 * h],
    [13, 10 * h],
    [14, 10 * h],
    [15, 10 * h],
    [16, 10 * h],
    [17, 10 * h],
    // past the budget the schedule still answers; discarding is the caller's decision
    [18, 10 * h],
    [1000, 10 * h],
  ])('after failed attempt %i → %i ms', (n, expected) => {
    expect(backoffAfterAttempt(n)).toBe(expected)
  })

  it.each([[0], [-1], [1.5], [Number.NaN], [Number.POSITIVE_INFINITY]])('throws on %s', (n) => {
    expect(() => backoffAfterAttempt(n)).toThrow(RangeError)
  })
})

describe('schedule constants', () => {
  it('has the seed schedule and budget', () => {
    expect(RETRY_SCHEDULE_MS).toEqual([5 * s, 5 * min, 30 * min, 2 * h, 5 * h])
    expect(LATER_RETRY_GAP_MS).toBe(10 * h)
    expect(MAX_ATTEMPTS).toBe(18)
    expect(Object.isFrozen(RETRY_SCHEDULE_MS)).toBe(true)
  })

  it('spans 17 gaps totalling exactly 127 h 35 min 5 s', () => {
    expect(RETRY_WINDOW_MS).toBe(127 * h + 35 * min + 5 * s)
    expect(RETRY_WINDOW_MS).toBe(459_305_000)
    let total = 0
    for (let n = 1; n < MAX_ATTEMPTS; n++) total += backoffAfterAttempt(n)
    expect(total).toBe(RETRY_WINDOW_MS)
    expect(RETRY_WINDOW_MS / (24 * h)).toBeCloseTo(5.3, 1)
  })

  it('caps Retry-After at one hour', () => {
    expect(RETRY_AFTER_CAP_MS).toBe(h)
  })
})

describe('parseRetryAfter', () => {
  const now = new Date('2026-05-01T12:00:00.000Z')

  it.each<[string, string | null | undefined, number | null]>([
    // absent / empty
    ['null', null, null],
    ['undefined', undefined, null],
    ['empty', '', null],
    ['blank', '   ', null],
    // delta-seconds
    ['zero', '0', 0],
    ['seconds', '120', 120 * s],
    ['padded with whitespace', ' 30 ', 30 * s],
    ['leading zeros', '007', 7 * s],
    ['a day', '86400', 24 * h],
    ['absurdly large', '9'.repeat(40), Number.MAX_SAFE_INTEGER],
    ['negative', '-5', 0],
    ['fraction', '1.5', null],
    ['signed positive', '+5', null],
    ['exponent', '1e3', null],
    ['unit suffix', '10s', null],
    ['two values', '120, 120', null],
    ['hex', '0x10', null],
    // IMF-fixdate
    ['IMF-fixdate in 90 s', 'Fri, 01 May 2026 12:01:30 GMT', 90 * s],
    ['IMF-fixdate in 2 h', 'Fri, 01 May 2026 14:00:00 GMT', 2 * h],
    ['IMF-fixdate now', 'Fri, 01 May 2026 12:00:00 GMT', 0],
    ['IMF-fixdate in the past', 'Sun, 06 Nov 1994 08:49:37 GMT', 0],
    ['IMF-fixdate, wrong weekday still read', 'Mon, 01 May 2026 12:00:10 GMT', 10 * s],
    ['IMF-fixdate with leap second', 'Fri, 01 May 2026 12:00:60 GMT', 59 * s],
    ['IMF-fixdate not GMT', 'Fri, 01 May 2026 12:01:30 UTC', null],
    ['IMF-fixdate with offset', 'Fri, 01 May 2026 12:01:30 +0000', null],
    ['IMF-fixdate 31 Feb', 'Tue, 31 Feb 2026 12:00:00 GMT', null],
    ['IMF-fixdate hour 24', 'Fri, 01 May 2026 24:00:00 GMT', null],
    ['IMF-fixdate minute 60', 'Fri, 01 May 2026 12:60:00 GMT', null],
    ['IMF-fixdate bad month', 'Fri, 01 Foo 2026 12:00:00 GMT', null],
    ['IMF-fixdate one-digit day', 'Fri, 1 May 2026 12:00:00 GMT', null],
    // RFC 850
    ['RFC 850 in 1 min', 'Friday, 01-May-26 12:01:00 GMT', min],
    ['RFC 850 two-digit year in the past', 'Sunday, 06-Nov-94 08:49:37 GMT', 0],
    ['RFC 850 short weekday', 'Fri, 01-May-26 12:01:00 GMT', null],
    // asctime (read as UTC)
    ['asctime in 45 s', 'Fri May  1 12:00:45 2026', 45 * s],
    ['asctime two-digit day', 'Mon May 11 12:00:00 2026', 10 * 24 * h],
    ['asctime in the past', 'Sun Nov  6 08:49:37 1994', 0],
    // things Date.parse would happily accept
    ['ISO 8601', '2026-05-01T12:01:00Z', null],
    ['bare year-ish number with text', '1 May', null],
    ['free text', 'tomorrow', null],
    ['very long', `Fri, 01 May 2026 12:01:30 GMT${' '.repeat(40)}x`, null],
  ])('%s: %j → %s', (_name, value, expected) => {
    expect(parseRetryAfter(value, now)).toBe(expected)
  })

  it('reads an RFC 850 year more than 50 years ahead as the previous century', () => {
    const in2026 = new Date('2026-01-01T00:00:00Z')
    // "77" would be 2077 (51 years ahead), so it is 1977: past → 0
    expect(parseRetryAfter('Saturday, 01-Jan-77 00:00:00 GMT', in2026)).toBe(0)
    // "76" is 2076, exactly 50 years ahead, so it stays in the future
    expect(parseRetryAfter('Wednesday, 01-Jan-76 00:00:00 GMT', in2026)).toBeGreaterThan(0)
  })
})

describe('cappedRetryAfter', () => {
  const now = new Date('2026-05-01T12:00:00.000Z')

  it.each<[string | null, number | null]>([
    [null, null],
    ['garbage', null],
    ['0', 0],
    ['120', 120 * s],
    ['3600', h],
    ['3601', h],
    ['86400', h],
    ['Fri, 01 May 2026 12:30:00 GMT', 30 * min],
    ['Sat, 02 May 2026 12:00:00 GMT', h],
    ['Sun, 06 Nov 1994 08:49:37 GMT', 0],
  ])('%j → %s', (value, expected) => {
    expect(cappedRetryAfter(value, now)).toBe(expected)
  })
})
