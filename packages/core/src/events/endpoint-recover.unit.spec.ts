import { describe, expect, it } from 'vitest'
import { COOL_DOWN_MS } from '../delivery/delivery-decider.js'
import { deliveryIdFor } from '../delivery/delivery-id.js'
import { recoverEntry, recoverVerdict, type RecoverFacts } from './endpoint-recover.js'

const live = { enabled: true, deleted_at: null, event_types: ['booking.*'], disabled_reason: null }
const decided = { type: 'booking.created', matched: [], denied: [] }
const facts = (over: Partial<RecoverFacts> = {}): RecoverFacts => ({
  endpoint_id: 'ep',
  event: { type: 'booking.created', fanned_out: true },
  visible: true,
  subscribed: true,
  scope: { admitted: true },
  delivery: null,
  decision: decided,
  at_decision: { ...live, enabled: false, disabled_reason: 'disabled_by_owner' },
  ...over,
})

describe('recoverVerdict', () => {
  const cases: [string, RecoverFacts, unknown][] = [
    ['missed while disabled → a new delivery, lineage endpoint_disabled', facts(), { action: 'new_delivery', missed: 'endpoint_disabled' }],
    ['not subscribed then, subscribed now', facts({ at_decision: { ...live, event_types: ['invoice.*'] } }), { action: 'new_delivery', missed: 'not_subscribed' }],
    ['created after the event', facts({ at_decision: null }), { action: 'new_delivery', missed: 'created_after_event' }],
    ['denied by scope then, admitted now', facts({ decision: { ...decided, denied: [{ endpoint_id: 'ep', reason: 'private' }] } }), { action: 'new_delivery', missed: 'scope_denied' }],
    ['no decision left in the ledger', facts({ decision: null }), { action: 'new_delivery', missed: 'no_decision' }],
    ['a discarded delivery → a new run', facts({ delivery: { state: 'discarded', retired: false } }), { action: 'new_run', missed: 'discarded' }],
    ['completed → nothing', facts({ delivery: { state: 'completed', retired: false } }), { action: 'none', reason: 'delivered' }],
    ['pending → in flight', facts({ delivery: { state: 'pending', retired: false } }), { action: 'none', reason: 'in_flight' }],
    ['running → in flight', facts({ delivery: { state: 'running', retired: false } }), { action: 'none', reason: 'in_flight' }],
    ['retryable → in flight', facts({ delivery: { state: 'retryable', retired: false } }), { action: 'none', reason: 'in_flight' }],
    ['retired → skipped', facts({ delivery: { retired: true } }), { action: 'skip', reason: 'delivery_retired' }],
    ['not fanned out yet → the fan-out will decide', facts({ event: { type: 'booking.created', fanned_out: false } }), { action: 'skip', reason: 'not_fanned_out_yet' }],
    ['internal now → skipped', facts({ visible: false }), { action: 'skip', reason: 'internal_event' }],
    ['globs do not match now → skipped', facts({ subscribed: false }), { action: 'skip', reason: 'not_subscribed' }],
    ['scope denies now → skipped, even if discarded', facts({ scope: { admitted: false, reason: 'raw' }, delivery: { state: 'discarded', retired: false } }), { action: 'skip', reason: 'scope_denied' }],
  ]
  it.each(cases)('%s', (_, f, expected) => expect(recoverVerdict(f)).toEqual(expected))
})

describe('recoverEntry', () => {
  const now = new Date('2026-03-01T00:00:00.000Z')
  const recovered = { since: '2026-02-28T00:00:00.000Z', until: now.toISOString(), missed: 'endpoint_disabled' as const }
  const event = { id: 'evt_1', type: 'booking.created' }
  const ctx = { now, actor: 'owner:t1' }
  it('a new delivery: the fan-out’s enqueue, marked recovered', () => {
    expect(recoverEntry({ owner_id: 'o', endpoint: { id: 'ep', failing_since: null }, event, recovered }, ctx)).toEqual({
      kind: 'delivery.enqueued', occurred_at: now, owner_id: 'o', endpoint_id: 'ep', event_id: 'evt_1', actor: 'owner:t1',
      delivery_id: deliveryIdFor('ep', 'evt_1'),
      payload: { event_type: 'booking.created', next_attempt_at: now.toISOString(), cool_down: false, recovered },
    })
  })
  it('a failing endpoint waits the cool-down', () => {
    const e = recoverEntry({ owner_id: 'o', endpoint: { id: 'ep', failing_since: now }, event, recovered }, ctx)
    expect(e.payload).toMatchObject({ cool_down: true, next_attempt_at: new Date(now.getTime() + COOL_DOWN_MS).toISOString() })
  })
  it('a discarded delivery: a new run naming the previous one', () => {
    const e = recoverEntry({ owner_id: 'o', endpoint: { id: 'ep', failing_since: null }, event, discarded: { id: 'd1', run: 2, attempts: 18 }, recovered: { ...recovered, missed: 'discarded' } }, ctx)
    expect(e).toMatchObject({ kind: 'delivery.redelivered', delivery_id: 'd1', payload: { run: 3, previous_run: 2, previous_attempts: 18, next_attempt_at: now.toISOString(), recovered: { missed: 'discarded' } } })
  })
})
