import { describe, expect, it } from 'vitest'
import { COOL_DOWN_MS } from '../delivery/delivery-decider.js'
import { deliveryIdFor } from '../delivery/delivery-id.js'
import { fanoutEntries } from './fanout-entries.js'

const now = new Date('2026-01-01T00:00:00.000Z')
const ctx = { now, actor: 'worker:w1' }
const event = { owner_id: 'o1', id: 'evt_1', type: 'booking.created' }
const healthy = { id: '00000000-0000-4000-8000-0000000000e1', failing_since: null }
const failing = { id: '00000000-0000-4000-8000-0000000000e2', failing_since: new Date(0) }

describe('fanoutEntries: the entries of one event fanned out', () => {
  it.each<[string, Parameters<typeof fanoutEntries>[0], string[], (string | null)[]]>([
    ['nothing matched: only the decision', { event, matched: [], denied: [], visible: true }, ['fanout.decided'], []],
    ['a healthy endpoint: due now', { event, matched: [healthy], denied: [], visible: true }, ['fanout.decided', 'delivery.enqueued'], [now.toISOString()]],
    [
      'a failing endpoint: after the cool-down',
      { event, matched: [failing], denied: [], visible: true },
      ['fanout.decided', 'delivery.enqueued'],
      [new Date(now.getTime() + COOL_DOWN_MS).toISOString()],
    ],
    ['an internal event: decided, skipped', { event, matched: [], denied: [], visible: false }, ['fanout.decided'], []],
  ])('%s', (_name, decision, kinds, dueAt) => {
    const entries = fanoutEntries(decision, ctx)
    expect(entries.map((e) => e.kind)).toEqual(kinds)
    expect(entries.filter((e) => e.kind === 'delivery.enqueued').map((e) => (e.payload as { next_attempt_at: string }).next_attempt_at)).toEqual(dueAt)
  })

  it('names what matched and what scope denied, and derives each delivery id from the pair', () => {
    const [decided, enqueued] = fanoutEntries({ event, matched: [healthy], denied: [{ endpoint_id: failing.id, reason: 'embed_denied' }], visible: true }, ctx)
    expect(decided).toMatchObject({ kind: 'fanout.decided', event_id: 'evt_1', payload: { type: 'booking.created', matched: [healthy.id], denied: [{ endpoint_id: failing.id, reason: 'embed_denied' }] } })
    expect(decided!.payload).not.toHaveProperty('skipped_internal')
    expect(enqueued).toMatchObject({ endpoint_id: healthy.id, delivery_id: deliveryIdFor(healthy.id, 'evt_1'), payload: { cool_down: false, event_type: 'booking.created' } })
  })
})
