import { describe, expect, it } from 'vitest'
import { SETTLE_WAIT_MAX_MS, SETTLE_WAIT_MIN_MS, settleWaitMs } from './settle-wait.js'

describe('settleWaitMs', () => {
  it.each([
    // The endpoint's next request waits on this settle: never longer than the minimum.
    [false, 200, SETTLE_WAIT_MIN_MS],
    [false, 5, SETTLE_WAIT_MIN_MS],
    [false, undefined, SETTLE_WAIT_MIN_MS],
    // Sent ahead: a quarter of how long the answer took, within the bounds.
    [true, 200, 50],
    [true, 100, 25],
    [true, 40, 10],
    // An answer within a few settles' time: the minimum (its lease would wait with it).
    [true, 39, SETTLE_WAIT_MIN_MS],
    [true, 15, SETTLE_WAIT_MIN_MS],
    [true, 5, SETTLE_WAIT_MIN_MS],
    [true, 0, SETTLE_WAIT_MIN_MS],
    [true, 15_000, SETTLE_WAIT_MAX_MS],
    // No request timing to go by.
    [true, undefined, SETTLE_WAIT_MIN_MS],
    [true, Number.NaN, SETTLE_WAIT_MIN_MS],
    [true, Number.POSITIVE_INFINITY, SETTLE_WAIT_MIN_MS],
  ])('sent ahead %s, answered in %s ms → waits %s ms', (sentAhead, answeredInMs, expected) => {
    expect(settleWaitMs({ sentAhead, answeredInMs })).toBe(expected)
  })
})
