import { describe, expect, it } from 'vitest'
import { databaseRetryDelayMs } from './database-retry.js'

const low = () => 0
const high = () => 0.999999

describe('databaseRetryDelayMs: when a unit of work that hit a database error runs again', () => {
  it.each<[string, Parameters<typeof databaseRetryDelayMs>[0], number, number | null, number | null]>([
    // class, failures in a row, delay at the lowest and highest jitter
    ['a deadlock, first time: at once, with jitter', 'retryable', 1, 1, 20],
    ['a serialization failure, 5th time', 'retryable', 5, 1, 100],
    ['retryable, 10th time: the last try', 'retryable', 10, 1, 200],
    ['retryable, 11th time: given up', 'retryable', 11, null, null],
    ['database gone, first time', 'unavailable', 1, 125, 249],
    ['database gone, 2nd', 'unavailable', 2, 250, 499],
    ['database gone, 5th', 'unavailable', 5, 2_000, 3_999],
    ['database gone, 6th: capped at 5 s', 'unavailable', 6, 2_500, 4_999],
    ['database gone, 1000th: still capped, never given up', 'unavailable', 1_000, 2_500, 4_999],
    ['a bug, first time', 'permanent', 1, 100, 100],
    ['a bug, 4th time', 'permanent', 4, 400, 400],
    ['a bug, 5th time: given up', 'permanent', 5, null, null],
  ])('%s', (_name, cls, failures, atLow, atHigh) => {
    expect(databaseRetryDelayMs(cls, failures, low)).toBe(atLow)
    expect(databaseRetryDelayMs(cls, failures, high)).toBe(atHigh)
  })

  it('refuses a count that is not a positive integer (a counting bug)', () => {
    expect(() => databaseRetryDelayMs('unavailable', 0)).toThrow(RangeError)
    expect(() => databaseRetryDelayMs('retryable', 1.5)).toThrow(RangeError)
  })
})
