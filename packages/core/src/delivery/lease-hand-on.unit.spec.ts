import { describe, expect, it } from 'vitest'
import { endpointRowFixture } from '@hookledger/testkit/row-fixtures'
import { leaseHandsOn } from './lease-hand-on.js'
import type { EndpointRow } from '../model/projections.js'

const T0 = new Date('2026-03-01T00:00:00Z')
const at = (ms: number) => new Date(T0.getTime() + ms)

describe('leaseHandsOn: a settle passes the lease on, or lets it go back', () => {
  const cases: [string, Partial<EndpointRow>, boolean, boolean][] = [
    ['a released, enabled endpoint: on', {}, true, true],
    ['after a retry too (ordering none)', {}, false, true],
    ['disabled: back', { enabled: false, disabled_reason: 'x' }, true, false],
    ['deleted: back', { deleted_at: T0 }, true, false],
    ['still leased by another delivery: back', { busy_until: at(1) }, true, false],
    ['a lease that just ended: on', { busy_until: T0 }, true, true],
    ['strict, the head done: on', { ordering: 'strict' }, true, true],
    ['strict, the head to be retried: back (the rest wait)', { ordering: 'strict' }, false, false],
    ['rate limit, bucket refilled: on', { rate_limit: { per_second: 10, burst: 1, adaptive: false }, rate_tat: T0 }, true, true],
    ['rate limit, bucket empty: back (the queue head waits for it)', { rate_limit: { per_second: 10, burst: 1, adaptive: false }, rate_tat: at(100) }, true, false],
  ]
  it.each(cases)('%s', (_name, over, settledDone, handsOn) => {
    expect(leaseHandsOn({ ...endpointRowFixture(), ...over } as EndpointRow, settledDone, T0)).toBe(handsOn)
  })
})
