import { describe, expect, it } from 'vitest'
import { decideClaim } from './claim-decider.js'
import { BUSY_SNOOZE_MS, JOB_TIMEOUT_MS } from './delivery-decider.js'
import type { DeliveryRow, EndpointRow } from './projections.js'

const T0 = new Date('2026-01-01T00:00:00.000Z')
const at = (ms: number) => new Date(T0.getTime() + ms)
const delivery: DeliveryRow = {
  id: '00000000-0000-4000-8000-0000000000d1', owner_id: 'o1', endpoint_id: '00000000-0000-4000-8000-0000000000e1',
  event_id: 'evt_1', event_type: 'booking.created', state: 'pending', run: 1, run_started_at: T0, attempts: 0, snoozes: 0,
  snoozed_ms: 0, next_attempt_at: T0, claimed_by: null, lease_until: null, last_status: null, last_error: null, created_at: T0, updated_at: T0,
}
const endpoint: EndpointRow = {
  id: delivery.endpoint_id, owner_id: 'o1', url: 'https://hooks.example.com/in', description: '', event_types: ['*'], embed_id: null,
  secret_sealed: new Uint8Array([1]), secret_key_id: 'k1', prev_secret_sealed: null, prev_secret_key_id: null, prev_secret_expires_at: null,
  enabled: true, disabled_reason: null, failing_since: null, busy_until: null, busy_delivery_id: null, deleted_at: null, created_at: T0, updated_at: T0,
  signature_scheme: 'v1', v1a_key_sealed: null, v1a_public_key: null, prev_v1a_key_sealed: null, prev_v1a_public_key: null, prev_v1a_key_expires_at: null,
}
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
