import { describe, expect, it } from 'vitest'
import { TURN_DELIVERIES_WHILE_OTHERS_WAIT, YIELDED_REMEMBERED, fairShareOrder, yieldedAfter, fairSlots, ownerReserves, ownerRoom, slotsToGiveBack, turnYieldsToWaiting, type FairCandidate, type OwnerShareState, type RecentOwner } from './fair-share.js'

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
    { name: 'never more than an owner\'s room (headroom kept for others)', candidates: [...flood.slice(0, 4), c('b', 1)], owners: new Map([['a', { inFlight: 0, weight: 1, room: 1 }]]), limit: 4, want: ['a-000', 'b-001'] },
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
})

const recent = (entries: Record<string, [inFlight: number, peak: number, weight?: number]>): Map<string, RecentOwner> =>
  new Map(Object.entries(entries).map(([id, [inFlight, peak, weight]]) => [id, { inFlight, peak, weight: weight ?? 1 }]))

describe('ownerRoom and slotsToGiveBack: slots kept free for owners active lately', () => {
  const cases: { name: string; slots: number; free: number; recent: Map<string, RecentOwner>; room: Record<string, number>; over: Record<string, number> }[] = [
    { name: 'one owner alone takes every slot and never gives one back', slots: 64, free: 3, recent: recent({ a: [61, 64] }), room: { a: 3 }, over: {} },
    { name: 'a quiet owner that used 5 lately: 5 stay free for it, the flood gives slots back', slots: 64, free: 0, recent: recent({ a: [64, 64], b: [0, 5] }), room: { a: 0, b: 0 }, over: { a: 5 } },
    { name: 'headroom there: the flood takes the rest, nobody gives back', slots: 64, free: 7, recent: recent({ a: [57, 64], b: [0, 5] }), room: { a: 2, b: 7 }, over: {} },
    { name: 'the quiet owner busy with its 5: nothing more is kept for it', slots: 64, free: 2, recent: recent({ a: [57, 64], b: [5, 5] }), room: { a: 2, b: 2 }, over: {} },
    { name: 'headroom is capped at the fair share', slots: 4, free: 0, recent: recent({ a: [4, 4], b: [0, 10] }), room: { a: 0 }, over: { a: 2 } },
    { name: 'two floods at their shares: nothing is kept, nobody gives back', slots: 4, free: 0, recent: recent({ a: [2, 4], b: [2, 4] }), room: { a: 0, b: 0 }, over: {} },
    { name: 'weight: the heavy owner keeps 3 of 4, the light one 1', slots: 4, free: 0, recent: recent({ a: [4, 4, 3], b: [0, 4] }), room: { a: 0 }, over: { a: 1 } },
    { name: 'only the shortfall: 3 free of the 5 kept, the flood gives back 2', slots: 64, free: 3, recent: recent({ a: [61, 64], b: [0, 5] }), room: { a: 0, b: 3 }, over: { a: 2 } },
    {
      name: 'more recent owners than slots: their reserves add up past every slot, yet an owner short of its share takes one, a new one too',
      slots: 4, free: 2, recent: recent({ a: [1, 1], b: [1, 1], c: [0, 1], d: [0, 1], e: [0, 1], f: [0, 1] }),
      room: { a: 0, c: 1, f: 1, new: 1 }, over: {},
    },
    {
      name: 'a flood beside 20 owners sending now and then: the headroom keeps half the slots, not all of them',
      slots: 8, free: 0, recent: recent({ flood: [8, 8], ...Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`q${i}`, [0, 1]])) }),
      room: { flood: 0, q0: 0 }, over: { flood: 4 },
    },
    { name: 'an owner below its share is not held to the others\' reserves', slots: 64, free: 5, recent: recent({ a: [10, 40], b: [0, 5], c: [49, 49] }), room: { a: 5, b: 5, c: 0 }, over: { c: 11 } },
  ]
  for (const t of cases) {
    it(t.name, () => {
      const reserves = ownerReserves(t.slots, t.recent)
      for (const [o, room] of Object.entries(t.room)) expect(ownerRoom(o, t.free, reserves), `room of ${o}`).toBe(room)
      expect(Object.fromEntries(slotsToGiveBack(t.free, reserves))).toEqual(t.over)
    })
  }

  // The rule as first written, every question asking the recent set anew: O(owners³) a claim.
  const reserveByDefinition = (o: string, slots: number, r: ReadonlyMap<string, RecentOwner>) =>
    Math.max(0, Math.min(r.get(o)!.peak, fairSlots(o, slots, r)) - r.get(o)!.inFlight)
  const othersByDefinition = (owner: string, slots: number, r: ReadonlyMap<string, RecentOwner>) => {
    let sum = 0
    for (const o of r.keys()) if (o !== owner) sum += reserveByDefinition(o, slots, r)
    return Math.min(sum, Math.max(1, Math.floor(slots / 2)))
  }
  const roomByDefinition = (owner: string, slots: number, free: number, r: ReadonlyMap<string, RecentOwner>) => {
    const withOwner = r.has(owner) ? r : new Map([...r, [owner, { inFlight: 0, peak: 0, weight: 1 }]])
    const short = Math.max(0, fairSlots(owner, slots, withOwner) - (r.get(owner)?.inFlight ?? 0))
    return Math.min(free, Math.max(short, free - othersByDefinition(owner, slots, r)))
  }
  it('the table answers as the definition does, for many owners of mixed weights (seeded)', () => {
    let seed = 7
    const next = (n: number) => ((seed = (Math.imul(seed, 1_664_525) + 1_013_904_223) >>> 0), seed % n)
    for (let round = 0; round < 40; round++) {
      const slots = 1 + next(256)
      const r = new Map<string, RecentOwner>()
      for (let i = 0, n = 1 + next(60); i < n; i++) r.set(`o${i}`, { inFlight: next(12), peak: next(16), weight: 1 + next(4) })
      const free = next(slots + 1)
      const reserves = ownerReserves(slots, r)
      const over = new Map<string, number>()
      for (const [o, x] of r) {
        expect(ownerRoom(o, free, reserves)).toBe(roomByDefinition(o, slots, free, r))
        const above = x.inFlight - fairSlots(o, slots, r)
        const short = othersByDefinition(o, slots, r) - free
        if (above > 0 && short > 0) over.set(o, Math.min(above, short))
      }
      expect(ownerRoom('never-seen', free, reserves)).toBe(roomByDefinition('never-seen', slots, free, r))
      expect(slotsToGiveBack(free, reserves)).toEqual(over)
    }
  })

  it('10,000 recent owners: one table, then each question in constant time', () => {
    const r = new Map<string, RecentOwner>()
    for (let i = 0; i < 10_000; i++) r.set(`o${i}`, { inFlight: i % 3, peak: 4, weight: 1 })
    const reserves = ownerReserves(64, r)
    // 64 slots over 10,000 owners: a share of 1 each, so the owners holding none keep one free;
    // the headroom keeps at most half the slots for the others.
    expect(reserves.total).toBe(3_334)
    expect(ownerRoom('o0', 5_000, reserves)).toBe(5_000 - 32)
    // Below its share of 1, an owner takes one slot however much the others keep.
    expect(ownerRoom('o0', 1, reserves)).toBe(1)
    expect(ownerRoom('o1', 1, reserves)).toBe(0)
    expect(slotsToGiveBack(0, reserves).size).toBe(3_333)
  })
})

describe('turnYieldsToWaiting: endpoints take turns when more are ready than slots', () => {
  const share = TURN_DELIVERIES_WHILE_OTHERS_WAIT
  const cases: { name: string; deliveries: number; waiting: number; yields: boolean }[] = [
    { name: 'nobody waits: a turn goes on however long', deliveries: 10_000, waiting: 0, yields: false },
    { name: 'endpoints wait, the turn short of its share: it goes on', deliveries: share - 1, waiting: 3, yields: false },
    { name: 'endpoints wait, the turn at its share: it ends', deliveries: share, waiting: 1, yields: true },
    { name: 'endpoints wait, the turn past its share: it ends', deliveries: share * 4, waiting: 50, yields: true },
  ]
  for (const t of cases) it(t.name, () => expect(turnYieldsToWaiting(t.deliveries, t.waiting)).toBe(t.yields))
})

describe('fairShareOrder with turns given up: an endpoint that gave its slot up does not win it straight back', () => {
  // A fan-out made every delivery due at one instant: ready times tie, so ids alone would decide.
  const ready = [c('a', 1, 0), c('a', 2, 0), c('a', 3, 0), c('b', 4, 0)]
  const ids = (xs: readonly FairCandidate[]) => xs.map((x) => x.endpoint_id)
  const order = (yielded: string[], limit = 4) => ids(fairShareOrder(ready, states({}), limit, new Set(yielded)))
  it('nothing yielded: by ready time, then id', () => expect(order([])).toEqual(['a-001', 'b-004', 'a-002', 'a-003']))
  it('one yielded, others ready: the others first, it last within its owner', () => expect(order(['a-001'])).toEqual(['a-002', 'b-004', 'a-003', 'a-001']))
  it('one free slot: an endpoint that gave way does not take it from one waiting', () => expect(order(['a-001'], 1)).toEqual(['a-002']))
  it('several yielded: in the order they gave way, whatever their ids', () => expect(order(['a-003', 'a-001'], 4)).toEqual(['a-002', 'b-004', 'a-003', 'a-001']))
  it('only yielded ones ready: they are claimed again, the earliest to give way first', () =>
    expect(ids(fairShareOrder([ready[0]!, ready[2]!], states({}), 1, new Set(['a-003', 'a-001'])))).toEqual(['a-003']))
  it('four endpoints, two slots, tied ready times: each is served before any is served twice', () => {
    const eps = [c('a', 1, 0), c('a', 2, 0), c('a', 3, 0), c('a', 4, 0)]
    let running = fairShareOrder(eps, states({}), 2).map((x) => x.endpoint_id)
    let yielded = new Set<string>()
    const served = [...running]
    for (let turn = 0; turn < 6; turn++) {
      // The older of the two running turns gives its slot up; the claim fills it.
      const gaveUp = running[0]!
      yielded = yieldedAfter(yielded, { gaveUp })
      const readyNow = eps.filter((e) => !running.slice(1).includes(e.endpoint_id))
      const next = fairShareOrder(readyNow, states({}), 1, yielded)[0]!.endpoint_id
      yielded = yieldedAfter(yielded, { claimed: [next] })
      running = [running[1]!, next]
      served.push(next)
    }
    expect(served).toEqual(['a-001', 'a-002', 'a-003', 'a-004', 'a-001', 'a-002', 'a-003', 'a-004'])
  })
})

describe('yieldedAfter: a worker remembers turns given up until they are claimed again', () => {
  it.each([
    ['gave up: added last', ['x', 'y'], { gaveUp: 'z' }, ['x', 'y', 'z']],
    ['gave up again: moved last', ['x', 'y'], { gaveUp: 'x' }, ['y', 'x']],
    ['claimed: forgotten', ['x', 'y'], { claimed: ['x'] }, ['y']],
    ['claimed, then gave up: last', ['x', 'y'], { claimed: ['x'], gaveUp: 'x' }, ['y', 'x']],
  ] as const)('%s', (_, before, change, after) => {
    expect([...yieldedAfter(new Set(before), change)]).toEqual(after)
  })
  it(`keeps the ${YIELDED_REMEMBERED} latest`, () => {
    let y = new Set<string>()
    for (let i = 0; i <= YIELDED_REMEMBERED; i++) y = yieldedAfter(y, { gaveUp: `e${i}` })
    expect(y.size).toBe(YIELDED_REMEMBERED)
    expect(y.has('e0')).toBe(false)
    expect(y.has(`e${YIELDED_REMEMBERED}`)).toBe(true)
  })
})
