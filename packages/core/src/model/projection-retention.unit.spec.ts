/**
 * Retention's pure half: which deliveries may retire and which endpoints may be purged, the
 * entries that say so, and how the fold removes the rows they name.
 */
import { describe, expect, it } from 'vitest'
import type { LedgerEntry } from './ledger-entry.js'
import { evolveDelivery, evolveEndpoint, type DeliveryRow, type DeliveryState, type EndpointRow } from './projections.js'
import { applyEntry, deliveryIdsOf, type ProjectionSet, type Touched } from './projection-set.js'
import { decidePurge, decideRetirement, isRetirable, retentionCutoff } from './projection-retention.js'
import { endpointRowFixture } from '@hookledger/testkit/row-fixtures'

const day = 24 * 3_600_000
const T0 = new Date('2026-03-01T00:00:00.000Z')
const at = (ms: number) => new Date(T0.getTime() + ms)
const NOW = at(40 * day)
const CUTOFF = retentionCutoff(NOW, 30) // T0 + 10 days
const ACTOR = 'system'

const D1 = '00000000-0000-4000-8000-0000000000d1'
const D2 = '00000000-0000-4000-8000-0000000000d2'
const D3 = '00000000-0000-4000-8000-0000000000d3'
const EP = '00000000-0000-4000-8000-0000000000e1'

function delivery(id: string, over: Partial<DeliveryRow> = {}): DeliveryRow {
  return {
    id,
    owner_id: 'o1',
    endpoint_id: EP,
    event_id: `evt_${id.slice(-2)}`,
    event_type: 'booking.created',
    state: 'completed',
    run: 1,
    run_started_at: T0,
    attempts: 1,
    snoozes: 0,
    snoozed_ms: 0,
    next_attempt_at: null,
    claimed_by: null,
    lease_until: null,
    last_status: 200,
    last_error: null,
    created_at: T0,
    updated_at: T0,
    ...over,
  }
}

function endpoint(over: Partial<EndpointRow> = {}): EndpointRow {
  return endpointRowFixture({ id: EP, created_at: T0, ...over })
}

describe('retentionCutoff', () => {
  it.each<[number, Date]>([
    [30, at(10 * day)],
    [1, at(39 * day)],
    [40, T0],
  ])('%i days before now', (days, cutoff) => {
    expect(retentionCutoff(NOW, days)).toEqual(cutoff)
  })
  it.each([0, -1, 1.5, Number.NaN])('refuses %s days', (days) => {
    expect(() => retentionCutoff(NOW, days)).toThrow(RangeError)
  })
})

describe('isRetirable', () => {
  const before = at(10 * day - 1)
  const exactly = CUTOFF
  const after = at(10 * day + 1)
  it.each<[DeliveryState, Date, boolean]>([
    ['completed', before, true],
    ['discarded', before, true],
    ['completed', exactly, false], // "older than": the cutoff instant itself stays
    ['discarded', after, false],
    ['pending', before, false],
    ['retryable', before, false],
    ['running', before, false],
  ])('%s, last changed %s → %s', (state, updated_at, retirable) => {
    expect(isRetirable({ state, updated_at }, CUTOFF)).toBe(retirable)
  })
})

describe('decideRetirement', () => {
  const ctx = { now: NOW, cutoff: CUTOFF, actor: ACTOR }
  it('names only the retirable rows, sorted, with count and cutoff', () => {
    const entry = decideRetirement(
      [
        delivery(D3, { state: 'discarded' }),
        delivery(D2, { state: 'running', claimed_by: 'w', lease_until: NOW }),
        delivery(D1),
        delivery('00000000-0000-4000-8000-0000000000d4', { updated_at: NOW }),
      ],
      ctx,
    )
    expect(entry).toEqual({
      kind: 'deliveries.retired',
      occurred_at: NOW,
      owner_id: '*',
      endpoint_id: null,
      delivery_id: null,
      event_id: null,
      actor: ACTOR,
      payload: { delivery_ids: [D1, D3], count: 2, cutoff: CUTOFF.toISOString() },
    })
  })
  it.each<[string, DeliveryRow[]]>([
    ['no candidates', []],
    ['only recent ones', [delivery(D1, { updated_at: NOW })]],
    ['only unsettled ones', [delivery(D1, { state: 'pending', next_attempt_at: T0 })]],
  ])('is null with %s', (_name, rows) => {
    expect(decideRetirement(rows, ctx)).toBeNull()
  })
})

describe('decidePurge', () => {
  const ctx = { now: NOW, actor: ACTOR }
  it.each<[string, Partial<EndpointRow>, number, boolean]>([
    ['deleted, nothing left to settle', { deleted_at: at(day) }, 0, true],
    ['deleted, a delivery still waiting or running', { deleted_at: at(day) }, 1, false],
    ['live', {}, 0, false],
    ['disabled but not deleted', { enabled: false, disabled_reason: 'x' }, 0, false],
  ])('%s → purge %s', (_name, over, unsettled, purged) => {
    const entry = decidePurge(endpoint(over), unsettled, ctx)
    expect(entry !== null).toBe(purged)
    if (entry) {
      expect(entry).toEqual({
        kind: 'endpoint.purged',
        occurred_at: NOW,
        owner_id: 'o1',
        endpoint_id: EP,
        delivery_id: null,
        event_id: null,
        actor: ACTOR,
        payload: { deleted_at: at(day).toISOString() },
      })
    }
  })
})

describe('the fold removes what the entries retire', () => {
  const retired = decideRetirement([delivery(D1), delivery(D2)], { now: NOW, cutoff: CUTOFF, actor: ACTOR })!
  const purged = decidePurge(endpoint({ deleted_at: at(day) }), 0, { now: NOW, actor: ACTOR })!

  it('evolve returns no row for a retired delivery or a purged endpoint', () => {
    expect(evolveDelivery(delivery(D1), retired)).toBeNull()
    expect(evolveEndpoint(endpoint({ deleted_at: at(day) }), purged)).toBeNull()
    // …and from no row, none.
    expect(evolveDelivery(null, retired)).toBeNull()
    expect(evolveEndpoint(null, purged)).toBeNull()
  })

  it('a batch entry is about every delivery it names; another entry about the one it names', () => {
    expect(deliveryIdsOf(retired)).toEqual([D1, D2])
    expect(deliveryIdsOf(purged)).toEqual([])
    const completed: LedgerEntry = { ...purged, kind: 'delivery.completed', endpoint_id: EP, delivery_id: D3, payload: {} }
    expect(deliveryIdsOf(completed)).toEqual([D3])
  })

  it('applyEntry removes the named rows, keeps the others, and marks the removed ones touched', () => {
    const set: ProjectionSet = {
      endpoints: new Map([[EP, endpoint({ deleted_at: at(day) })]]),
      deliveries: new Map([D1, D2, D3].map((id) => [id, delivery(id)])),
    }
    const touched: Touched = { endpoints: new Set(), deliveries: new Set() }
    applyEntry(set, retired, touched)
    applyEntry(set, purged, touched)
    expect([...set.deliveries.keys()]).toEqual([D3])
    expect(set.endpoints.size).toBe(0)
    expect(touched).toEqual({ endpoints: new Set([EP]), deliveries: new Set([D1, D2]) })
  })

  it('a retirement naming rows the set does not hold touches nothing', () => {
    const set: ProjectionSet = { endpoints: new Map(), deliveries: new Map() }
    const touched: Touched = { endpoints: new Set(), deliveries: new Set() }
    applyEntry(set, retired, touched)
    expect(touched.deliveries.size).toBe(0)
  })
})
