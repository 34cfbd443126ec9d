import { describe, expect, it } from 'vitest'
import { heldByCoolDown, releaseCoolDown } from './cool-down-release.js'
import type { DeliveryRow } from '../model/projections.js'

const now = new Date('2030-01-01T00:00:00.000Z')
const later = new Date(now.getTime() + 300_000)
const row = (over: Partial<DeliveryRow>): DeliveryRow => ({
  id: '11111111-1111-4111-8111-111111111111', owner_id: 'o', endpoint_id: '22222222-2222-4222-8222-222222222222', event_id: 'evt_1',
  event_type: 'booking.created', state: 'pending', run: 1, run_started_at: now, attempts: 0, next_attempt_at: later,
  claimed_by: null, lease_until: null, last_status: null, last_error: null, created_at: now, updated_at: now, snoozes: 0, snoozed_ms: 0,
  ...over,
})

describe('heldByCoolDown: what a recovery releases', () => {
  it.each<[string, Partial<DeliveryRow>, boolean]>([
    ['a new delivery waiting out the cool-down', {}, true],
    ['a busy-lease snooze (2 s, harmless to end early)', { next_attempt_at: new Date(now.getTime() + 2_000) }, true],
    ['already due', { next_attempt_at: now }, false],
    ['a Retry-After snooze: the receiver asked for it', { snoozes: 1, snoozed_ms: 3_600_000 }, false],
    ['a backoff after an attempt', { state: 'retryable', attempts: 1 }, false],
    ['a redelivery run waiting on a cool-down', { run: 2 }, true],
    ['running', { state: 'running', claimed_by: 'worker:w', lease_until: later }, false],
    ['completed', { state: 'completed', next_attempt_at: null }, false],
  ])('%s → %s', (_name, over, held) => {
    expect(heldByCoolDown(row(over), now)).toBe(held)
  })

  it('releases each held one to now, saying until when it was held', () => {
    const entries = releaseCoolDown([row({}), row({ id: '33333333-3333-4333-8333-333333333333', snoozes: 1 })], { now, actor: 'system' })
    expect(entries).toEqual([
      expect.objectContaining({
        kind: 'delivery.cool_down_released',
        delivery_id: '11111111-1111-4111-8111-111111111111',
        actor: 'system',
        payload: { next_attempt_at: now.toISOString(), held_until: later.toISOString() },
      }),
    ])
  })
})
