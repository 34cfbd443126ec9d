import { describe, expect, it } from 'vitest'
import { SlotHolds } from './slot-holds.js'

describe('SlotHolds: two claims side by side never take more than the free slots between them', () => {
  it.each([
    // free before any hold, what the first claim picks, what the second then may hold
    { free: 8, firstPicks: null, second: null },
    { free: 8, firstPicks: 3, second: 5 },
    { free: 8, firstPicks: 0, second: 8 },
    { free: 8, firstPicks: 8, second: null },
    // A claim never keeps more than it held, whatever it reports.
    { free: 8, firstPicks: 20, second: null },
    { free: 0, firstPicks: null, second: null },
  ])('free $free, the first picks $firstPicks: the second may hold $second', ({ free, firstPicks, second }) => {
    const holds = new SlotHolds(() => free)
    const first = holds.hold()
    if (free === 0) {
      expect(first).toBeNull()
      return
    }
    expect(first?.limit).toBe(free)
    if (firstPicks !== null) first!.picked(firstPicks)
    expect(holds.hold()?.limit ?? null).toBe(second)
  })

  it('a released hold frees its slots; releasing twice frees them once', () => {
    let inFlight = 0
    const holds = new SlotHolds(() => 4 - inFlight)
    const a = holds.hold()!
    a.picked(2)
    // What it claimed goes in flight as it releases.
    inFlight += 2
    a.release()
    a.release()
    expect(holds.hold()?.limit).toBe(2)
  })
})
