import { describe, expect, it } from 'vitest'
import { leasedHeadAt } from './leased-head.js'

describe('leasedHeadAt: a leased queue head on the 2-second grid', () => {
  const cases: [string, string, string][] = [
    ['on the grid: stays', '2026-03-01T00:00:10.000Z', '2026-03-01T00:00:10.000Z'],
    ['a millisecond past: the next step', '2026-03-01T00:00:10.001Z', '2026-03-01T00:00:12.000Z'],
    ['just short of a step: that step', '2026-03-01T00:00:11.999Z', '2026-03-01T00:00:12.000Z'],
    ['an odd second: the even one after', '2026-03-01T00:00:15.000Z', '2026-03-01T00:00:16.000Z'],
    ['across a minute', '2026-03-01T00:00:59.500Z', '2026-03-01T00:01:00.000Z'],
    ['across a day', '2026-03-01T23:59:58.001Z', '2026-03-02T00:00:00.000Z'],
  ]
  it.each(cases)('%s', (_name, end, head) => {
    expect(leasedHeadAt(new Date(end)).toISOString()).toBe(head)
  })
  it('never before the lease ends, never 2 s or more after', () => {
    for (let ms = 0; ms < 10_000; ms += 37) {
      const end = new Date(Date.UTC(2026, 2, 1) + ms)
      const gap = leasedHeadAt(end).getTime() - end.getTime()
      expect(gap).toBeGreaterThanOrEqual(0)
      expect(gap).toBeLessThan(2_000)
    }
  })
})
