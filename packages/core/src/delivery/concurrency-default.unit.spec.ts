import { describe, expect, it } from 'vitest'
import { concurrencyDefault } from './concurrency-default.js'

describe('concurrencyDefault', () => {
  it.each([
    [1, 64],
    [2, 128],
    [4, 256],
    [16, 1024],
    [64, 1024],
    // What a broken probe may give: one core's worth.
    [0, 64],
    [Number.NaN, 64],
    [1.5, 64],
  ])('%s cores → %s endpoints at once', (cores, expected) => {
    expect(concurrencyDefault(cores)).toBe(expected)
  })
})
