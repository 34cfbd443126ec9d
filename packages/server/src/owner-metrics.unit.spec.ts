import { describe, expect, it } from 'vitest'
import type { OwnerQueueStats } from '@hookledger/store'
import { OTHER_OWNERS, ownersTopWithOther } from './owner-metrics.js'

const o = (owner_id: string, waiting: number, in_flight = 0, endpoints = 1, due = 0): OwnerQueueStats => ({ owner_id, endpoints, waiting, due, in_flight })

describe('ownersTopWithOther: the per-owner gauges name at most N owners, the rest summed as "other"', () => {
  const cases: { name: string; owners: OwnerQueueStats[]; n: number; want: OwnerQueueStats[] }[] = [
    { name: 'no owners: no series', owners: [], n: 3, want: [] },
    { name: 'fewer than N: each named, no "other"', owners: [o('a', 1), o('b', 5)], n: 3, want: [o('b', 5), o('a', 1)] },
    { name: 'exactly N: no "other"', owners: [o('a', 1), o('b', 2)], n: 2, want: [o('b', 2), o('a', 1)] },
    {
      name: 'more than N: the busiest named, the rest summed figure by figure',
      owners: [o('a', 1, 0, 2, 1), o('b', 9), o('c', 0, 4), o('d', 2, 1, 3, 2)],
      n: 2,
      want: [o('b', 9), o('c', 0, 4), { owner_id: OTHER_OWNERS, waiting: 3, in_flight: 1, endpoints: 5, due: 3 }],
    },
    { name: 'in flight counts as unfinished work', owners: [o('a', 3), o('b', 1, 3)], n: 1, want: [o('b', 1, 3), { owner_id: OTHER_OWNERS, waiting: 3, in_flight: 0, endpoints: 1, due: 0 }] },
    { name: 'ties: more endpoints first, then by id (stable between scrapes)', owners: [o('z', 1, 0, 1), o('y', 1, 0, 4), o('x', 1, 0, 1)], n: 2, want: [o('y', 1, 0, 4), o('x', 1, 0, 1), { ...o(OTHER_OWNERS, 1, 0, 1) }] },
    { name: 'N = 0: everything is "other"', owners: [o('a', 1), o('b', 2)], n: 0, want: [{ owner_id: OTHER_OWNERS, waiting: 3, in_flight: 0, endpoints: 2, due: 0 }] },
  ]
  for (const c of cases) {
    it(c.name, () => {
      expect(ownersTopWithOther(c.owners, c.n)).toEqual(c.want)
    })
  }

  it('bounds the series at N + 1 whatever the number of owners', () => {
    const many = Array.from({ length: 5000 }, (_, i) => o(`owner-${i}`, i % 17, i % 3))
    const series = ownersTopWithOther(many, 10)
    expect(series).toHaveLength(11)
    expect(series.reduce((s, x) => s + x.waiting, 0)).toBe(many.reduce((s, x) => s + x.waiting, 0))
  })
})
