import { describe, expect, it } from 'vitest'
import { decideClaim } from './claim-decider.js'
import { BUSY_SNOOZE_MS, JOB_TIMEOUT_MS } from './delivery-decider.js'
import type { DeliveryRow, EndpointRow } from '../model/projections.js'
import { deliveryRowFixture, endpointRowFixture } from '@hookledger/testkit/row-fixtures'

const T0 = new Date('2026-01-01T00:00:00.000Z')
const at = (ms: number) => new Date(T0.getTime() + ms)
const delivery: DeliveryRow = deliveryRowFixture()
const endpoint: EndpointRow = endpointRowFixture()
const ctx = { now: T0, actor: 'worker:w1', leaseUntil: at(JOB_TIMEOUT_MS), leasedByThisClaim: false }

describe('decideClaim: what a claim does with one due delivery', () => {
  it.each<[string, Partial<EndpointRow>, boolean, Partial<typeof ctx>, boolean, string[], Record<string, unknown>]>([
    ['a free endpoint: claimed, with the lease', {}, true, {}, true, ['delivery.claimed'], { worker: 'worker:w1', lease_until: at(JOB_TIMEOUT_MS).toISOString() }],
    ['endpoint deleted: discarded', { deleted_at: T0 }, true, {}, false, ['delivery.discarded'], { reason: 'endpoint_deleted' }],
    ['endpoint disabled: discarded, with why', { enabled: false, disabled_reason: 'failing_5_days' }, true, {}, false, ['delivery.discarded'], { reason: 'endpoint_disabled', detail: 'failing_5_days' }],
    ['event pruned: discarded', {}, false, {}, false, ['delivery.discarded'], { reason: 'event_pruned' }],
    ['deleted wins over a pruned event', { deleted_at: T0 }, false, {}, false, ['delivery.discarded'], { reason: 'endpoint_deleted' }],
    ['leased by another worker: snoozed 2 s, no attempt', { busy_until: at(1) }, true, {}, false, ['delivery.lease_busy'], { next_attempt_at: at(BUSY_SNOOZE_MS).toISOString() }],
    ['a lease that just ended is free', { busy_until: T0 }, true, {}, true, ['delivery.claimed'], {}],
    ['leased by this same claim (one in flight per endpoint): snoozed', {}, true, { leasedByThisClaim: true }, false, ['delivery.lease_busy'], {}],
  ])('%s', (_name, ep, eventExists, over, claimed, kinds, payload) => {
    const d = decideClaim(delivery, { ...endpoint, ...ep }, eventExists, { ...ctx, ...over })
    expect(d.claimed).toBe(claimed)
    expect(d.entries.map((e) => e.kind)).toEqual(kinds)
    expect(d.entries[0]!.payload).toMatchObject(payload)
    expect(d.entries[0]).toMatchObject({ delivery_id: delivery.id, endpoint_id: endpoint.id, actor: 'worker:w1', occurred_at: T0 })
  })
})
