import { describe, expect, it } from 'vitest'
import { SlotHolds, claimUnderHold } from './slot-holds.js'

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

describe('claimUnderHold: what a claim took is in flight before its slots are free again', () => {
  it('launches, then releases; another claim between sees no slot twice', async () => {
    let inFlight = 0
    const holds = new SlotHolds(() => 4 - inFlight)
    const hold = holds.hold()!
    const seenAtLaunch: (number | null)[] = []
    await claimUnderHold(hold, async () => 3, (n) => {
      inFlight += n
      // Still held: the fourth slot is the only one another claim could take.
      seenAtLaunch.push(holds.hold()?.limit ?? null)
    })
    expect(seenAtLaunch).toEqual([null])
    expect(holds.hold()?.limit).toBe(1)
  })

  it.each([
    { fails: 'the claim', claim: async () => { throw new Error('down') }, launch: () => {} },
    { fails: 'the launch', claim: async () => 1, launch: () => { throw new Error('bad') } },
  ])('releases when $fails fails, and the error reaches the caller', async ({ claim, launch }) => {
    const holds = new SlotHolds(() => 2)
    const hold = holds.hold()!
    await expect(claimUnderHold(hold, claim, launch)).rejects.toThrow()
    expect(holds.hold()?.limit).toBe(2)
  })
})
