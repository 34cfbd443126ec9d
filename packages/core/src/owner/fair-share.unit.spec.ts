import { describe, expect, it } from 'vitest'
import { fairShareOrder, fairSlots, ownersToYield, type FairCandidate, type OwnerShareState } from './fair-share.js'

const T0 = Date.parse('2026-03-01T00:00:00Z')
const c = (owner: string, n: number, readyMs = n): FairCandidate => ({ endpoint_id: `${owner}-${String(n).padStart(3, '0')}`, owner_id: owner, ready_at: new Date(T0 + readyMs) })
const states = (entries: Record<string, [inFlight: number, weight: number]>): Map<string, OwnerShareState> =>
  new Map(Object.entries(entries).map(([id, [inFlight, weight]]) => [id, { inFlight, weight }]))

describe('fairShareOrder: who gets the free slots', () => {
  const flood = Array.from({ length: 20 }, (_, i) => c('a', i, i))
  const cases: { name: string; candidates: FairCandidate[]; owners: Map<string, OwnerShareState>; limit: number; want: string[] }[] = [
    { name: 'one owner: by ready time', candidates: [c('a', 2), c('a', 1), c('a', 3)], owners: states({}), limit: 2, want: ['a-001', 'a-002'] },
    { name: 'a newer owner is not behind a flood of older heads', candidates: [...flood, c('b', 1, 10_000)], owners: states({}), limit: 2, want: ['a-000', 'b-001'] },
    { name: 'the owner holding slots waits behind one holding none', candidates: [...flood, c('b', 1, 10_000)], owners: states({ a: [10, 1] }), limit: 1, want: ['b-001'] },
    { name: 'turns alternate while shares are equal', candidates: [c('a', 1), c('a', 2), c('b', 3), c('b', 4)], owners: states({}), limit: 4, want: ['a-001', 'b-003', 'a-002', 'b-004'] },
    { name: 'weight 3 takes three slots to one', candidates: [...flood.slice(0, 6), c('b', 1), c('b', 2)], owners: states({ a: [0, 3] }), limit: 4, want: ['a-000', 'a-001', 'b-001', 'a-002'] },
    { name: 'never more than the free slots', candidates: flood, owners: states({}), limit: 0, want: [] },
  ]
  for (const t of cases) {
    it(t.name, () => expect(fairShareOrder(t.candidates, t.owners, t.limit).map((x) => x.endpoint_id)).toEqual(t.want))
  }
})

describe('fairSlots and ownersToYield: giving slots back when someone waits', () => {
  it('splits slots by weight among the active owners, at least one each', () => {
    expect(fairSlots('a', 64, states({ a: [64, 1], b: [0, 1] }))).toBe(32)
    expect(fairSlots('a', 64, states({ a: [64, 3], b: [0, 1] }))).toBe(48)
    expect(fairSlots('b', 2, states({ a: [2, 10], b: [0, 1] }))).toBe(1)
    expect(fairSlots('a', 64, states({ a: [64, 1] }))).toBe(64)
  })
  const cases: { name: string; slots: number; running: Map<string, OwnerShareState>; waiting: Record<string, number>; want: string[] }[] = [
    { name: 'one owner alone keeps every slot', slots: 4, running: states({ a: [4, 1] }), waiting: { a: 1 }, want: [] },
    { name: 'a waiting owner with no slot: the flooding one gives back', slots: 4, running: states({ a: [4, 1] }), waiting: { a: 1, b: 1 }, want: ['a'] },
    { name: 'the waiting owner already holds its share: nobody gives back', slots: 4, running: states({ a: [2, 1], b: [2, 1] }), waiting: { b: 1 }, want: [] },
    { name: 'only owners above their share give back', slots: 6, running: states({ a: [4, 1], c: [2, 1] }), waiting: { b: 1 }, want: ['a'] },
    { name: 'weight counts: 3:1 over four slots leaves a heavy owner at 3', slots: 4, running: states({ a: [3, 3] }), waiting: { b: 1 }, want: [] },
    { name: 'nobody waiting: nothing given back', slots: 4, running: states({ a: [4, 1] }), waiting: {}, want: [] },
  ]
  for (const t of cases) {
    it(t.name, () => {
      const waiting = new Map(Object.entries(t.waiting).map(([id, weight]) => [id, { weight }]))
      expect([...ownersToYield(t.slots, t.running, waiting)].sort()).toEqual(t.want)
    })
  }
})
