import { describe, expect, it } from 'vitest'
import {
  endpointQuotaRefusal,
  ownerDefaults,
  ownerLimitsChange,
  ownerLimitsPatchSchema,
  ownerPublishRefusal,
  ownerResumeDecision,
  ownerSuspendDecision,
  ownerWithLimits,
  refusalRememberedUntil,
  retryAfterSeconds,
  type OwnerLimitsPatch,
  type OwnerRow,
} from './owner-limits.js'

const base: OwnerRow = { ...ownerDefaults('acme'), publish_per_second: 10, weight: 2 }

describe('owner limits: a subset changes only what it names', () => {
  const cases: { name: string; patch: OwnerLimitsPatch; after: Partial<OwnerRow>; change: OwnerLimitsPatch }[] = [
    { name: 'nothing named', patch: {}, after: { publish_per_second: 10, weight: 2 }, change: {} },
    { name: 'one set', patch: { max_endpoints: 5 }, after: { max_endpoints: 5, publish_per_second: 10 }, change: { max_endpoints: 5 } },
    { name: 'null clears', patch: { publish_per_second: null }, after: { publish_per_second: null, weight: 2 }, change: { publish_per_second: null } },
    { name: 'weight cleared is 1', patch: { weight: null }, after: { weight: 1 }, change: { weight: null } },
    { name: 'the same value is no change', patch: { publish_per_second: 10, weight: 2 }, after: { publish_per_second: 10 }, change: {} },
    { name: 'clearing what is unset is no change', patch: { max_in_flight: null }, after: { max_in_flight: null }, change: {} },
  ]
  for (const c of cases) {
    it(c.name, () => {
      expect(ownerWithLimits(base, c.patch)).toMatchObject(c.after)
      expect(ownerLimitsChange(base, c.patch)).toEqual(c.change)
    })
  }
})

describe('owner limits: the input', () => {
  const cases: { input: unknown; ok: boolean }[] = [
    { input: { publish_per_second: 0.5, publish_burst: 1 }, ok: true },
    { input: { weight: null, max_endpoints: 0 }, ok: true },
    { input: { weight: 0 }, ok: false },
    { input: { weight: 1.5 }, ok: false },
    { input: { publish_per_second: 0 }, ok: false },
    { input: { max_in_flight: 0 }, ok: false },
    { input: { burst: 3 }, ok: false },
  ]
  for (const c of cases) it(JSON.stringify(c.input), () => expect(ownerLimitsPatchSchema.safeParse(c.input).success).toBe(c.ok))
})

describe('owner suspension', () => {
  it('suspends a live owner once; resumes only a suspended one', () => {
    expect(ownerSuspendDecision(base, 'unpaid')).toEqual({ reason: 'unpaid' })
    const suspended = { ...base, suspended_at: new Date('2026-03-01T00:00:00Z'), suspended_reason: 'unpaid' }
    expect(ownerSuspendDecision(suspended, 'again')).toBeNull()
    expect(ownerResumeDecision(suspended)).toBe(true)
    expect(ownerResumeDecision(base)).toBe(false)
  })
})

describe('owner publish refusals', () => {
  it('suspended: says since when and why', () => {
    const r = ownerPublishRefusal('acme', { refused: 'owner_suspended', suspended_at: '2026-03-01T00:00:00Z', reason: 'unpaid' })
    expect(r).toMatchObject({ code: 'owner_suspended' })
    expect(r.message).toContain('2026-03-01T00:00:00.000Z')
    expect(r.message).toContain('unpaid')
    expect(r.retry_at).toBeUndefined()
  })
  it('rate limited: says until when', () => {
    const r = ownerPublishRefusal('acme', { refused: 'owner_rate_limited', retry_at: '2026-03-01T00:00:01.5+00:00', publish_per_second: 2, publish_burst: 4 })
    expect(r).toMatchObject({ code: 'owner_rate_limited', retry_at: '2026-03-01T00:00:01.500Z' })
    expect(r.message).toContain('2/s, burst 4')
  })
  const now = new Date('2026-03-01T00:00:00Z')
  const waits: [string, number][] = [
    ['2026-03-01T00:00:00.001Z', 1],
    ['2026-03-01T00:00:01.000Z', 1],
    ['2026-03-01T00:00:01.001Z', 2],
    ['2026-02-28T23:59:59.000Z', 1],
  ]
  for (const [at, seconds] of waits) it(`Retry-After until ${at} is ${seconds}`, () => expect(retryAfterSeconds(at, now)).toBe(seconds))
})

describe('a rate-limit refusal remembered by the API process', () => {
  const now = new Date('2026-03-01T00:00:00.000Z')
  const cases: [string, number, string | null][] = [
    ['2026-03-01T00:00:00.005Z', 1_000, '2026-03-01T00:00:00.005Z'], // until the bucket could admit
    ['2026-03-01T00:16:40.000Z', 1_000, '2026-03-01T00:00:01.000Z'], // a slow limit: at most maxMs, so a raised one is seen
    ['2026-03-01T00:00:00.000Z', 1_000, null], // already due: ask the database
    ['2026-02-28T23:59:59.000Z', 1_000, null],
    ['2026-03-01T00:00:00.500Z', 0, null], // remembering off
  ]
  for (const [retryAt, maxMs, until] of cases) {
    it(`retry_at ${retryAt}, at most ${maxMs} ms: ${until ?? 'not remembered'}`, () =>
      expect(refusalRememberedUntil(retryAt, now, maxMs)?.toISOString() ?? null).toBe(until))
  }
})

describe('max_endpoints', () => {
  const cases: [number | null, number, boolean][] = [[null, 1000, false], [3, 2, false], [3, 3, true], [0, 0, true]]
  for (const [max, existing, refused] of cases) {
    it(`limit ${max}, ${existing} existing: ${refused ? 'refused' : 'created'}`, () =>
      expect(endpointQuotaRefusal('acme', max, existing) !== null).toBe(refused))
  }
})
