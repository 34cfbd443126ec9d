import { describe, expect, it } from 'vitest'
import { decideClaim } from './claim-decider.js'
import { BUSY_SNOOZE_MS, JOB_TIMEOUT_MS } from './delivery-decider.js'
import type { DeliveryRow, EndpointRow } from '../model/projections.js'
import { deliveryRowFixture, endpointRowFixture } from '@hookledger/testkit/row-fixtures'

const T0 = new Date('2026-01-01T00:00:00.000Z')
const at = (ms: number) => new Date(T0.getTime() + ms)
const delivery: DeliveryRow = deliveryRowFixture()
const endpoint: EndpointRow = endpointRowFixture()
const ctx = { now: T0, actor: 'worker:w1', leaseMs: JOB_TIMEOUT_MS, leasedByThisClaim: false }

describe('decideClaim: what a claim does with one due delivery', () => {
  it.each<[string, Partial<EndpointRow>, boolean, Partial<typeof ctx>, boolean, string[], Record<string, unknown>]>([
    ['a free endpoint: claimed, with the lease (its length: ledger format 5)', {}, true, {}, true, ['delivery.claimed'], { lease_ms: JOB_TIMEOUT_MS }],
    ['endpoint deleted: discarded', { deleted_at: T0 }, true, {}, false, ['delivery.discarded'], { reason: 'endpoint_deleted' }],
    ['endpoint disabled: discarded, with why', { enabled: false, disabled_reason: 'failing_5_days' }, true, {}, false, ['delivery.discarded'], { reason: 'endpoint_disabled', detail: 'failing_5_days' }],
    ['event pruned: discarded', {}, false, {}, false, ['delivery.discarded'], { reason: 'event_pruned' }],
    ['deleted wins over a pruned event', { deleted_at: T0 }, false, {}, false, ['delivery.discarded'], { reason: 'endpoint_deleted' }],
    ['leased by another worker: snoozed 2 s, no attempt', { busy_until: at(1) }, true, {}, false, ['delivery.lease_busy'], { next_attempt_at: at(BUSY_SNOOZE_MS).toISOString() }],
    ['a lease that just ended is free', { busy_until: T0 }, true, {}, true, ['delivery.claimed'], {}],
    ['leased by this same claim (one in flight per endpoint): snoozed', {}, true, { leasedByThisClaim: true }, false, ['delivery.lease_busy'], {}],
    // The rate limit's bucket (GCRA, endpoint/rate-limit.ts): 10/s is one per 100 ms.
    ['rate limit, fresh bucket: claimed, the bucket one interval on', { rate_limit: { per_second: 10, burst: 1, adaptive: false } }, true, {}, true, ['delivery.claimed'], { rate_tat: at(100).toISOString() }],
    ['rate limit, empty bucket: waits for the refill, no attempt', { rate_limit: { per_second: 10, burst: 1, adaptive: false }, rate_tat: at(100) }, true, {}, false, ['delivery.lease_busy'], { next_attempt_at: at(100).toISOString() }],
    ['rate limit, burst 3 with two spent: claimed', { rate_limit: { per_second: 10, burst: 3, adaptive: false }, rate_tat: at(200) }, true, {}, true, ['delivery.claimed'], { rate_tat: at(300).toISOString() }],
    ['rate limit, adapted down to 5/s: the wider interval', { rate_limit: { per_second: 10, burst: 1, adaptive: true }, rate_tat: at(150), rate_adapted_per_second: 5 }, true, {}, false, ['delivery.lease_busy'], { next_attempt_at: at(150).toISOString() }],
    ['a busy lease wins over the bucket (snoozed 2 s)', { busy_until: at(1), rate_limit: { per_second: 10, burst: 1, adaptive: false }, rate_tat: at(100) }, true, {}, false, ['delivery.lease_busy'], { next_attempt_at: at(BUSY_SNOOZE_MS).toISOString() }],
    ['a disabled endpoint is discarded whatever its bucket', { enabled: false, disabled_reason: 'x', rate_limit: { per_second: 10, burst: 1, adaptive: false }, rate_tat: at(100) }, true, {}, false, ['delivery.discarded'], { reason: 'endpoint_disabled' }],
  ])('%s', (_name, ep, eventExists, over, claimed, kinds, payload) => {
    const d = decideClaim(delivery, { ...endpoint, ...ep }, eventExists, { ...ctx, ...over })
    expect(d.claimed).toBe(claimed)
    expect(d.entries.map((e) => e.kind)).toEqual(kinds)
    expect(d.entries[0]!.payload).toMatchObject(payload)
    if (ep.rate_limit === undefined && claimed) expect(d.entries[0]!.payload).not.toHaveProperty('rate_tat')
    expect(d.entries[0]).toMatchObject({ delivery_id: delivery.id, endpoint_id: endpoint.id, actor: 'worker:w1', occurred_at: T0 })
  })
})
