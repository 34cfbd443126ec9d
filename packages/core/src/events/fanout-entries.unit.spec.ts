import { describe, expect, it } from 'vitest'
import { COOL_DOWN_MS } from '../delivery/delivery-decider.js'
import { deliveryIdFor } from '../delivery/delivery-id.js'
import type { LedgerEntry, LedgerPayloads } from '../model/ledger-entry.js'
import { applyEntry, type ProjectionSet } from '../model/projection-set.js'
import { impliedEnqueueOf, impliedEnqueues } from './fanout-enqueues.js'
import { fanoutEntries } from './fanout-entries.js'

const now = new Date('2026-01-01T00:00:00.000Z')
const ctx = { now, actor: 'worker:w1' }
const event = { owner_id: 'o1', id: 'evt_1', type: 'booking.created' }
const healthy = { id: '00000000-0000-4000-8000-0000000000e1', failing_since: null }
const failing = { id: '00000000-0000-4000-8000-0000000000e2', failing_since: new Date(0) }
const coolDownEnd = new Date(now.getTime() + COOL_DOWN_MS).toISOString()

describe('fanoutEntries: one event fanned out is one ledger row (format 3), its deliveries implied', () => {
  it.each<[string, Parameters<typeof fanoutEntries>[0], { delivery: string; due: string; cool_down: boolean }[]]>([
    ['nothing matched: no delivery', { event, matched: [], denied: [], visible: true }, []],
    ['a healthy endpoint: due now', { event, matched: [healthy], denied: [], visible: true }, [{ delivery: deliveryIdFor(healthy.id, 'evt_1'), due: now.toISOString(), cool_down: false }]],
    ['a failing endpoint: after the cool-down', { event, matched: [failing], denied: [], visible: true }, [{ delivery: deliveryIdFor(failing.id, 'evt_1'), due: coolDownEnd, cool_down: true }]],
    [
      'both, in matched order',
      { event, matched: [failing, healthy], denied: [], visible: true },
      [
        { delivery: deliveryIdFor(failing.id, 'evt_1'), due: coolDownEnd, cool_down: true },
        { delivery: deliveryIdFor(healthy.id, 'evt_1'), due: now.toISOString(), cool_down: false },
      ],
    ],
    ['an internal event: decided, skipped', { event, matched: [], denied: [], visible: false }, []],
  ])('%s', (_name, decision, implied) => {
    const entries = fanoutEntries(decision, ctx)
    expect(entries.map((e) => e.kind)).toEqual(['fanout.decided'])
    expect(entries[0]!.payload).toMatchObject({ enqueues: true })
    const enqueues = impliedEnqueues(entries[0]!)
    expect(enqueues.map((e) => ({ delivery: e.delivery_id, due: e.payload.next_attempt_at, cool_down: e.payload.cool_down }))).toEqual(implied)
    for (const e of enqueues) expect(e).toMatchObject({ kind: 'delivery.enqueued', owner_id: 'o1', event_id: 'evt_1', actor: 'worker:w1', payload: { event_type: 'booking.created', by_fanout: true } })
  })

  it('names what matched and what scope denied; the cool-down only when an endpoint is failing', () => {
    const [decided] = fanoutEntries({ event, matched: [healthy], denied: [{ endpoint_id: failing.id, reason: 'embed_denied' }], visible: true }, ctx)
    expect(decided).toMatchObject({ kind: 'fanout.decided', event_id: 'evt_1', delivery_id: null, endpoint_id: null, payload: { type: 'booking.created', matched: [healthy.id], denied: [{ endpoint_id: failing.id, reason: 'embed_denied' }] } })
    expect(decided!.payload).not.toHaveProperty('skipped_internal')
    expect(decided!.payload).not.toHaveProperty('cool_down')
    const [cooling] = fanoutEntries({ event, matched: [failing], denied: [], visible: true }, ctx)
    expect(cooling!.payload).toMatchObject({ cool_down: { endpoints: [failing.id], until: coolDownEnd } })
  })

  it('impliedEnqueueOf: the one endpoint it matched, none for another; an earlier decision implies nothing', () => {
    const [decided] = fanoutEntries({ event, matched: [healthy, failing], denied: [], visible: true }, ctx)
    expect(impliedEnqueueOf(decided!, failing.id)).toEqual(impliedEnqueues(decided!)[1])
    expect(impliedEnqueueOf(decided!, '00000000-0000-4000-8000-0000000000e3')).toBeNull()
    const { enqueues: _format3, ...format2 } = decided!.payload as LedgerPayloads['fanout.decided']
    const old = { ...decided!, payload: format2 } as LedgerEntry
    expect(impliedEnqueues(old)).toEqual([])
    expect(impliedEnqueueOf(old, healthy.id)).toBeNull()
  })

  it('the fold creates each delivery, and keeps one its pair already has', () => {
    const [decided] = fanoutEntries({ event, matched: [healthy, failing], denied: [], visible: true }, ctx)
    const set: ProjectionSet = { endpoints: new Map(), deliveries: new Map() }
    applyEntry(set, decided!)
    const id = deliveryIdFor(healthy.id, 'evt_1')
    expect(set.deliveries.get(id)).toMatchObject({ id, endpoint_id: healthy.id, event_id: 'evt_1', owner_id: 'o1', event_type: 'booking.created', state: 'pending', run: 1, attempts: 0, next_attempt_at: now })
    expect(set.deliveries.get(deliveryIdFor(failing.id, 'evt_1'))?.next_attempt_at).toEqual(new Date(coolDownEnd))
    // A second decision over the same pair (a re-run of the fan-out) leaves the row as it is.
    const before = { ...set.deliveries.get(id)!, state: 'completed' as const }
    set.deliveries.set(id, before)
    const touched = { endpoints: new Set<string>(), deliveries: new Set<string>() }
    applyEntry(set, { ...decided!, occurred_at: new Date(now.getTime() + 60_000) }, touched)
    expect(set.deliveries.get(id)).toBe(before)
    expect(touched.deliveries.has(id)).toBe(false)
  })
})
