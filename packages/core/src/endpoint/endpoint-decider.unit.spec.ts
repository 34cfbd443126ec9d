/**
 * The endpoint state machine (the seed's "One endpoint" diagram): the transitions a delivery
 * outcome implies (`decideEndpointAfterOutcome`), the owner's switch (`decideEndpointUpdate`),
 * and the projection the entries fold into (`evolveEndpoint`). No database.
 */
import { describe, expect, it } from 'vitest'
import { DeliveryOutcome, JOB_TIMEOUT_MS, type AttemptFacts } from '../delivery/delivery-decider.js'
import {
  secretRotationBlockedUntil,
  DISABLE_AFTER_FAILING_MS,
  decideEndpointAfterOutcome,
  decideEndpointUpdate,
  endpointState,
} from './endpoint-decider.js'
import type { LedgerEntry, LedgerEntryOf } from '../model/ledger-entry.js'
import { endpointRowFixture } from '@hookledger/testkit/row-fixtures'
import { bytesToBase64, evolveEndpoint, type EndpointRow } from '../model/projections.js'
import { applyEntry, type ProjectionSet } from '../model/projection-set.js'

const s = 1_000
const min = 60 * s
const h = 60 * min
const day = 24 * h

const T0 = new Date('2026-01-01T00:00:00.000Z')
const at = (ms: number) => new Date(T0.getTime() + ms)
const isoAt = (ms: number) => at(ms).toISOString()
const ACTOR = 'worker:w1'
const EP = '00000000-0000-4000-8000-0000000000e1'
const DL = '00000000-0000-4000-8000-0000000000d1'

function endpoint(over: Partial<EndpointRow> = {}): EndpointRow {
  return endpointRowFixture({ id: EP, description: 'prod', event_types: ['booking.*'], secret_sealed: new Uint8Array([1, 2, 3]), created_at: T0, ...over })
}

const facts = (status: number | null = 500): AttemptFacts => ({
  started_at: T0,
  duration_ms: 5,
  status_code: status,
  error: status === null ? 'timeout' : `HTTP ${status}`,
  signed_with: ['k1'],
})

const base = (now: Date, actor = ACTOR) => ({
  occurred_at: now,
  owner_id: 'o1',
  endpoint_id: EP,
  delivery_id: null,
  event_id: null,
  actor,
})

const fold = (row: EndpointRow | null, entries: readonly LedgerEntry[]) =>
  entries.reduce<EndpointRow | null>((r, e) => evolveEndpoint(r, e), row)

describe('endpointState', () => {
  it.each<[string, Partial<EndpointRow>, string]>([
    ['enabled', {}, 'enabled'],
    ['failing', { failing_since: T0 }, 'failing'],
    ['disabled', { enabled: false, disabled_reason: 'x' }, 'disabled'],
    ['disabled while failing', { enabled: false, failing_since: T0 }, 'disabled'],
    ['deleted', { deleted_at: T0 }, 'deleted'],
    ['deleted while disabled', { deleted_at: T0, enabled: false }, 'deleted'],
  ])('%s', (_name, over, state) => {
    expect(endpointState(endpoint(over))).toBe(state)
  })
})

describe('decideEndpointAfterOutcome', () => {
  const now = at(h)
  const failures: [string, DeliveryOutcome][] = [
    ['a 5xx (retry scheduled)', DeliveryOutcome.retryScheduled(facts(500), 5 * s)],
    ['a timeout (retry scheduled)', DeliveryOutcome.retryScheduled(facts(null), 5 * s)],
    ['a 410', DeliveryOutcome.discarded('http_status', facts(410), { detail: '410' })],
    ['a 404', DeliveryOutcome.discarded('http_status', facts(404), { detail: '404' })],
    ['a 429 with Retry-After (snoozed)', DeliveryOutcome.snoozedForRetryAfter(facts(429), 60 * s)],
    ['a 429 without Retry-After', DeliveryOutcome.retryScheduled(facts(429), 5 * s)],
    ['attempt 18 (max_attempts)', DeliveryOutcome.discarded('max_attempts', facts(500))],
    [
      'an egress block',
      DeliveryOutcome.discarded('egress_blocked', facts(null), { counted: false }),
    ],
    [
      'a snooze refused past the retry window',
      DeliveryOutcome.discarded('retry_window_exceeded', facts(503), { counted: false }),
    ],
  ]

  it.each(failures)('enabled → failing on %s (failing_since = now)', (_name, outcome) => {
    const row = endpoint()
    const entries = decideEndpointAfterOutcome(row, outcome, now, ACTOR)
    expect(entries).toEqual([
      { ...base(now), kind: 'endpoint.failing', payload: { since: isoAt(h) } },
    ])
    expect(fold(row, entries)).toMatchObject({ enabled: true, failing_since: now, updated_at: now })
  })

  it.each(failures)(
    'failing stays failing on %s before 5 days (since unchanged)',
    (_name, outcome) => {
      const row = endpoint({ failing_since: at(0) })
      expect(
        decideEndpointAfterOutcome(row, outcome, at(DISABLE_AFTER_FAILING_MS - 1), ACTOR),
      ).toEqual([])
    },
  )

  it.each(failures)('failing → disabled on %s at exactly 5 days', (_name, outcome) => {
    const row = endpoint({ failing_since: at(0) })
    const when = at(DISABLE_AFTER_FAILING_MS)
    const entries = decideEndpointAfterOutcome(row, outcome, when, ACTOR)
    expect(entries).toEqual([
      {
        ...base(when),
        kind: 'endpoint.disabled',
        payload: { reason: `failing since ${isoAt(0)} (5 days without a success)` },
      },
    ])
    expect(fold(row, entries)).toMatchObject({
      enabled: false,
      disabled_reason: `failing since ${isoAt(0)} (5 days without a success)`,
      failing_since: at(0),
    })
    expect(endpointState(fold(row, entries)!)).toBe('disabled')
  })

  it('5 days is 120 h, measured from failing_since', () => {
    expect(DISABLE_AFTER_FAILING_MS).toBe(5 * day)
    const row = endpoint({ failing_since: at(3 * h) })
    const fail = DeliveryOutcome.retryScheduled(facts(), 10 * h)
    expect(decideEndpointAfterOutcome(row, fail, at(5 * day + 3 * h - 1), ACTOR)).toEqual([])
    expect(decideEndpointAfterOutcome(row, fail, at(5 * day + 3 * h), ACTOR)).toHaveLength(1)
    expect(decideEndpointAfterOutcome(row, fail, at(9 * day), ACTOR)).toMatchObject([
      { kind: 'endpoint.disabled' },
    ])
  })

  it('failing → enabled on a success (failing_since cleared)', () => {
    const row = endpoint({ failing_since: at(0) })
    const entries = decideEndpointAfterOutcome(
      row,
      DeliveryOutcome.completed(facts(200)),
      now,
      ACTOR,
    )
    expect(entries).toEqual([
      { ...base(now), kind: 'endpoint.recovered', payload: { failing_since: isoAt(0) } },
    ])
    expect(fold(row, entries)).toMatchObject({ enabled: true, failing_since: null })
    expect(endpointState(fold(row, entries)!)).toBe('enabled')
  })

  it('a success after 5 days of failure still recovers (no disable on success)', () => {
    const row = endpoint({ failing_since: at(0) })
    const entries = decideEndpointAfterOutcome(
      row,
      DeliveryOutcome.completed(facts(200)),
      at(6 * day),
      ACTOR,
    )
    expect(entries.map((e) => e.kind)).toEqual(['endpoint.recovered'])
  })

  it('enabled stays enabled on a success (nothing to record)', () => {
    expect(
      decideEndpointAfterOutcome(endpoint(), DeliveryOutcome.completed(facts(200)), now, ACTOR),
    ).toEqual([])
  })

  it.each<[string, DeliveryOutcome]>([
    ['a busy snooze', DeliveryOutcome.snoozedForBusy()],
    ['an interrupted attempt (the worker was lost)', DeliveryOutcome.interrupted(facts(null))],
    ['a discard on claim: endpoint disabled', DeliveryOutcome.discarded('endpoint_disabled')],
    ['a discard on claim: event pruned', DeliveryOutcome.discarded('event_pruned')],
  ])('%s is not an endpoint failure: nothing, whatever the state', (_name, outcome) => {
    expect(decideEndpointAfterOutcome(endpoint(), outcome, now, ACTOR)).toEqual([])
    expect(
      decideEndpointAfterOutcome(endpoint({ failing_since: at(0) }), outcome, at(6 * day), ACTOR),
    ).toEqual([])
  })

  it.each<[string, DeliveryOutcome]>([
    ['a success', DeliveryOutcome.completed(facts(200))],
    ['a failure', DeliveryOutcome.retryScheduled(facts(), 5 * s)],
    ['a 410', DeliveryOutcome.discarded('http_status', facts(410))],
  ])('a deleted endpoint records nothing on %s', (_name, outcome) => {
    expect(
      decideEndpointAfterOutcome(endpoint({ deleted_at: at(0) }), outcome, now, ACTOR),
    ).toEqual([])
    expect(
      decideEndpointAfterOutcome(
        endpoint({ deleted_at: at(0), failing_since: at(0) }),
        outcome,
        at(6 * day),
        ACTOR,
      ),
    ).toEqual([])
  })

  it('an already disabled endpoint is not disabled again', () => {
    const row = endpoint({
      enabled: false,
      disabled_reason: 'disabled_by_owner',
      failing_since: at(0),
    })
    expect(
      decideEndpointAfterOutcome(
        row,
        DeliveryOutcome.retryScheduled(facts(), 5 * s),
        at(6 * day),
        ACTOR,
      ),
    ).toEqual([])
  })

  it('the actor is the one given (worker or system)', () => {
    const entries = decideEndpointAfterOutcome(
      endpoint(),
      DeliveryOutcome.retryScheduled(facts(), 5 * s),
      now,
      'system',
    )
    expect(entries[0]).toMatchObject({ actor: 'system' })
  })
})

describe('decideEndpointUpdate', () => {
  const now = at(2 * day)
  const owner = 'owner:tok1'

  it('enabled → disabled: the owner switches it off (reason disabled_by_owner)', () => {
    const row = endpoint()
    const entries = decideEndpointUpdate(row, { enabled: false }, now, owner)
    expect(entries).toEqual([
      { ...base(now, owner), kind: 'endpoint.disabled', payload: { reason: 'disabled_by_owner' } },
    ])
    expect(fold(row, entries)).toMatchObject({
      enabled: false,
      disabled_reason: 'disabled_by_owner',
    })
  })

  it('failing → disabled by the owner keeps failing_since until re-enabled', () => {
    const row = endpoint({ failing_since: at(0) })
    const after = fold(row, decideEndpointUpdate(row, { enabled: false }, now, owner))
    expect(after).toMatchObject({ enabled: false, failing_since: at(0) })
  })

  it('disabled → enabled: the owner switches it on, clearing the failure', () => {
    const row = endpoint({
      enabled: false,
      disabled_reason: `failing since ${isoAt(0)} (5 days without a success)`,
      failing_since: at(0),
    })
    const entries = decideEndpointUpdate(row, { enabled: true }, now, owner)
    expect(entries).toEqual([{ ...base(now, owner), kind: 'endpoint.enabled', payload: {} }])
    expect(fold(row, entries)).toMatchObject({
      enabled: true,
      disabled_reason: null,
      failing_since: null,
      updated_at: now,
    })
  })

  it('failing → enabled: switching a failing endpoint on clears the failure too', () => {
    const row = endpoint({ failing_since: at(0) })
    const entries = decideEndpointUpdate(row, { enabled: true }, now, owner)
    expect(entries.map((e) => e.kind)).toEqual(['endpoint.enabled'])
    expect(endpointState(fold(row, entries)!)).toBe('enabled')
  })

  it.each<[string, Partial<EndpointRow>, { enabled?: boolean }]>([
    ['enabled: true on a healthy endpoint', {}, { enabled: true }],
    [
      'enabled: false on a disabled endpoint',
      { enabled: false, disabled_reason: 'x' },
      { enabled: false },
    ],
    ['an empty patch', {}, {}],
  ])('no-op: %s appends nothing', (_name, over, patch) => {
    expect(decideEndpointUpdate(endpoint(over), patch, now, owner)).toEqual([])
  })

  it('same field values are not a change', () => {
    const row = endpoint()
    expect(
      decideEndpointUpdate(
        row,
        {
          url: row.url,
          description: row.description,
          event_types: [...row.event_types],
          embed_id: null,
        },
        now,
        owner,
      ),
    ).toEqual([])
  })

  it('field changes are one endpoint.updated naming only what changed, then the switch', () => {
    const row = endpoint({ enabled: false, disabled_reason: 'disabled_by_owner' })
    const entries = decideEndpointUpdate(
      row,
      {
        url: 'https://new.example.com/h',
        description: 'prod',
        event_types: ['*'],
        embed_id: 'emb_1',
        enabled: true,
      },
      now,
      owner,
    )
    expect(entries).toEqual([
      {
        ...base(now, owner),
        kind: 'endpoint.updated',
        payload: { url: 'https://new.example.com/h', event_types: ['*'], embed_id: 'emb_1' },
      },
      { ...base(now, owner), kind: 'endpoint.enabled', payload: {} },
    ])
    expect(fold(row, entries)).toMatchObject({
      url: 'https://new.example.com/h',
      description: 'prod',
      event_types: ['*'],
      embed_id: 'emb_1',
      enabled: true,
    })
  })

  it('embed_id can be cleared to null', () => {
    const row = endpoint({ embed_id: 'emb_1' })
    const entries = decideEndpointUpdate(row, { embed_id: null }, now, owner)
    expect(entries).toMatchObject([{ kind: 'endpoint.updated', payload: { embed_id: null } }])
    expect(fold(row, entries)).toMatchObject({ embed_id: null })
  })
})

describe('the "One endpoint" diagram, end to end through decide + fold', () => {
  it('create → enabled → failing → enabled → failing → disabled → enabled → deleted', () => {
    const created: LedgerEntry = {
      ...base(at(0), 'owner:tok1'),
      kind: 'endpoint.created',
      payload: {
        url: 'https://hooks.example.com/in',
        description: '',
        event_types: ['*'],
        embed_id: null,
        secret_sealed: bytesToBase64(new Uint8Array([9, 9])),
        secret_key_id: 'k1',
      },
    }
    let row = fold(null, [created])!
    const states = [endpointState(row)]
    const step = (entries: LedgerEntry[]) => {
      row = fold(row, entries)!
      states.push(endpointState(row))
    }
    const fail = DeliveryOutcome.retryScheduled(facts(), 5 * s)
    step(decideEndpointAfterOutcome(row, fail, at(h), ACTOR))
    step(decideEndpointAfterOutcome(row, DeliveryOutcome.completed(facts(200)), at(2 * h), ACTOR))
    step(decideEndpointAfterOutcome(row, fail, at(3 * h), ACTOR))
    step(decideEndpointAfterOutcome(row, fail, at(3 * h + 4 * day), ACTOR))
    step(decideEndpointAfterOutcome(row, fail, at(3 * h + 5 * day), ACTOR))
    step(decideEndpointUpdate(row, { enabled: true }, at(6 * day), 'owner:tok1'))
    step([{ ...base(at(7 * day), 'owner:tok1'), kind: 'endpoint.deleted', payload: {} }])
    expect(states).toEqual([
      'enabled',
      'failing',
      'enabled',
      'failing',
      'failing',
      'disabled',
      'enabled',
      'deleted',
    ])
  })
})

describe('evolveEndpoint on each entry kind', () => {
  const e = <K extends LedgerEntry['kind']>(
    kind: K,
    payload: LedgerEntryOf<K>['payload'],
    over: Partial<LedgerEntry> = {},
  ): LedgerEntry => ({ ...base(at(h)), kind, payload, ...over }) as LedgerEntry
  const row = endpoint({ failing_since: at(0) })

  it('endpoint.created builds the enabled row', () => {
    const sealed = new Uint8Array([7, 8, 9])
    expect(
      evolveEndpoint(
        null,
        e('endpoint.created', {
          url: 'https://a.example/h',
          description: 'd',
          event_types: ['x.*'],
          embed_id: 'emb',
          secret_sealed: bytesToBase64(sealed),
          secret_key_id: 'k9',
        }),
      ),
    ).toEqual({
      id: EP,
      owner_id: 'o1',
      url: 'https://a.example/h',
      description: 'd',
      event_types: ['x.*'],
      embed_id: 'emb',
      secret_sealed: sealed,
      secret_key_id: 'k9',
      prev_secret_sealed: null,
      prev_secret_key_id: null,
      prev_secret_expires_at: null,
      enabled: true,
      disabled_reason: null,
      failing_since: null,
      busy_until: null,
      busy_delivery_id: null,
      deleted_at: null,
      created_at: at(h),
      updated_at: at(h),
      signature_scheme: 'v1',
      v1a_key_sealed: null,
      v1a_public_key: null,
      prev_v1a_key_sealed: null,
      prev_v1a_public_key: null,
      prev_v1a_key_expires_at: null,
      // Entries from before endpoint options: no custom headers, the default redirect rule.
      headers: {},
      secret_headers_sealed: {},
      follow_redirects: 'same_origin',
      rate_limit: null,
      rate_tat: null,
      rate_adapted_per_second: null,
      ordering: 'none',
      mtls: null,
      oauth2: null,
    })
  })

  it('any other kind on a missing row leaves it missing', () => {
    expect(evolveEndpoint(null, e('endpoint.failing', { since: isoAt(0) }))).toBeNull()
  })

  it('endpoint.updated changes only the fields named', () => {
    expect(evolveEndpoint(row, e('endpoint.updated', { description: 'new' }))).toEqual({
      ...row,
      description: 'new',
      updated_at: at(h),
    })
  })

  it('endpoint.enabled clears disabled_reason and failing_since', () => {
    const disabled = endpoint({ enabled: false, disabled_reason: 'r', failing_since: at(0) })
    expect(evolveEndpoint(disabled, e('endpoint.enabled', {}))).toEqual({
      ...disabled,
      enabled: true,
      disabled_reason: null,
      failing_since: null,
      updated_at: at(h),
    })
  })

  it('endpoint.disabled records the reason', () => {
    expect(evolveEndpoint(row, e('endpoint.disabled', { reason: 'r' }))).toEqual({
      ...row,
      enabled: false,
      disabled_reason: 'r',
      updated_at: at(h),
    })
  })

  it('endpoint.failing sets failing_since from the payload', () => {
    expect(evolveEndpoint(endpoint(), e('endpoint.failing', { since: isoAt(30 * min) }))).toEqual({
      ...endpoint(),
      failing_since: at(30 * min),
      updated_at: at(h),
    })
  })

  it('endpoint.recovered clears failing_since', () => {
    expect(evolveEndpoint(row, e('endpoint.recovered', { failing_since: isoAt(0) }))).toEqual({
      ...row,
      failing_since: null,
      updated_at: at(h),
    })
  })

  it('endpoint.secret_rotated with a grace window keeps the previous secret', () => {
    expect(
      evolveEndpoint(
        row,
        e('endpoint.secret_rotated', {
          secret_sealed: bytesToBase64(new Uint8Array([4])),
          secret_key_id: 'k2',
          previous_key_id: 'k1',
          previous_sealed: bytesToBase64(row.secret_sealed),
          previous_expires_at: isoAt(25 * h),
        }),
      ),
    ).toEqual({
      ...row,
      secret_sealed: new Uint8Array([4]),
      secret_key_id: 'k2',
      prev_secret_sealed: row.secret_sealed,
      prev_secret_key_id: 'k1',
      prev_secret_expires_at: at(25 * h),
      updated_at: at(h),
    })
  })

  it('endpoint.secret_rotated without a grace window drops the previous secret', () => {
    const rotated = endpoint({
      prev_secret_sealed: new Uint8Array([1]),
      prev_secret_key_id: 'k0',
      prev_secret_expires_at: at(h),
    })
    expect(
      evolveEndpoint(
        rotated,
        e('endpoint.secret_rotated', {
          secret_sealed: bytesToBase64(new Uint8Array([4])),
          secret_key_id: 'k2',
          previous_key_id: 'k1',
          previous_sealed: null,
          previous_expires_at: null,
        }),
      ),
    ).toMatchObject({
      secret_key_id: 'k2',
      prev_secret_sealed: null,
      prev_secret_key_id: null,
      prev_secret_expires_at: null,
    })
  })

  it('endpoint.deleted marks it deleted', () => {
    expect(evolveEndpoint(row, e('endpoint.deleted', {}))).toEqual({
      ...row,
      deleted_at: at(h),
      updated_at: at(h),
    })
  })

  describe('the lease', () => {
    const claim = e(
      'delivery.claimed',
      { worker: ACTOR, lease_until: isoAt(h + JOB_TIMEOUT_MS) },
      { delivery_id: DL },
    )
    const leased = evolveEndpoint(endpoint(), claim)!

    it('delivery.claimed takes it (busy_until, busy_delivery_id), leaving updated_at alone', () => {
      expect(leased).toEqual({
        ...endpoint(),
        busy_until: at(h + JOB_TIMEOUT_MS),
        busy_delivery_id: DL,
      })
    })

    const attempted = {
      attempt: 1,
      counted: true,
      run: 1,
      started_at: isoAt(h),
      duration_ms: 5,
      status_code: 200,
      error: null,
      outcome: 'completed' as const,
      signed_with: ['k1'],
    }
    it.each<[string, LedgerEntry]>([
      ['delivery.attempted', e('delivery.attempted', attempted, { delivery_id: DL })],
      [
        'delivery.discarded',
        e('delivery.discarded', { reason: 'endpoint_disabled' }, { delivery_id: DL }),
      ],
      [
        'delivery.lease_busy',
        e('delivery.lease_busy', { next_attempt_at: isoAt(h + 2 * s) }, { delivery_id: DL }),
      ],
    ])('%s by the holder releases it', (_name, entry) => {
      expect(evolveEndpoint(leased, entry)).toEqual(endpoint())
    })

    it.each<[string, LedgerEntry]>([
      ['delivery.attempted', e('delivery.attempted', attempted, { delivery_id: 'other' })],
      [
        'delivery.discarded',
        e('delivery.discarded', { reason: 'max_attempts' }, { delivery_id: 'other' }),
      ],
      [
        'delivery.lease_busy',
        e('delivery.lease_busy', { next_attempt_at: isoAt(h) }, { delivery_id: 'other' }),
      ],
    ])('%s by another delivery leaves it (same object)', (_name, entry) => {
      expect(evolveEndpoint(leased, entry)).toBe(leased)
    })

    it.each<LedgerEntry['kind']>([
      'delivery.completed',
      'delivery.retry_scheduled',
      'delivery.snoozed',
      'delivery.enqueued',
      'delivery.redelivered',
      'fanout.decided',
    ])('%s leaves the endpoint row as it is (same object)', (kind) => {
      expect(evolveEndpoint(leased, { ...claim, kind } as LedgerEntry)).toBe(leased)
    })
  })
})

describe('applyEntry', () => {
  it('routes an entry to both its endpoint and its delivery and reports what changed', () => {
    const set: ProjectionSet = { endpoints: new Map([[EP, endpoint()]]), deliveries: new Map() }
    const touched = { endpoints: new Set<string>(), deliveries: new Set<string>() }
    applyEntry(
      set,
      {
        ...base(at(0)),
        delivery_id: DL,
        event_id: 'evt_1',
        kind: 'delivery.enqueued',
        payload: { event_type: 'booking.created', next_attempt_at: isoAt(0), cool_down: false },
      },
      touched,
    )
    expect([...touched.deliveries]).toEqual([DL])
    expect([...touched.endpoints]).toEqual([]) // enqueuing does not change the endpoint row
    applyEntry(
      set,
      {
        ...base(at(0)),
        delivery_id: DL,
        event_id: 'evt_1',
        kind: 'delivery.claimed',
        payload: { worker: ACTOR, lease_until: isoAt(JOB_TIMEOUT_MS) },
      },
      touched,
    )
    expect([...touched.endpoints]).toEqual([EP])
    expect(set.endpoints.get(EP)).toMatchObject({ busy_delivery_id: DL })
    expect(set.deliveries.get(DL)).toMatchObject({ state: 'running' })
  })

  it('ignores entries about rows the set does not hold (other than creations)', () => {
    const set: ProjectionSet = { endpoints: new Map(), deliveries: new Map() }
    applyEntry(set, { ...base(at(0)), kind: 'endpoint.failing', payload: { since: isoAt(0) } })
    expect(set.endpoints.size).toBe(0)
  })
})

describe('secretRotationBlockedUntil: the second-rotation rule', () => {
  const until = at(24 * 3_600_000)
  it.each<[string, { prev_secret_sealed: Uint8Array | null; prev_secret_expires_at: Date | null }, number, boolean, Date | null]>([
    ['never rotated', { prev_secret_sealed: null, prev_secret_expires_at: null }, 0, false, null],
    ['previous still signing: blocked until it stops', { prev_secret_sealed: new Uint8Array([1]), prev_secret_expires_at: until }, 1_000, false, until],
    ['previous still signing, expire_previous: allowed', { prev_secret_sealed: new Uint8Array([1]), prev_secret_expires_at: until }, 1_000, true, null],
    ['the window just ended: allowed', { prev_secret_sealed: new Uint8Array([1]), prev_secret_expires_at: until }, 24 * 3_600_000, false, null],
    ['rotated with no grace (previous dropped at once): allowed', { prev_secret_sealed: null, prev_secret_expires_at: null }, 1_000, false, null],
  ])('%s', (_name, row, ms, expire, expected) => {
    expect(secretRotationBlockedUntil(row, at(ms), expire)).toEqual(expected)
  })
})
