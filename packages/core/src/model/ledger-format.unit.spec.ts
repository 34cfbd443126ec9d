import { describe, expect, it } from 'vitest'
import { attemptPayloadOf, attemptPayloadWritten, claimLeaseUntil, type AttemptPayload } from './ledger-format.js'
import { deliveryRowFixture, endpointRowFixture } from '@hookledger/testkit/row-fixtures'
import { evolveDelivery, evolveEndpoint } from './projections.js'
import type { LedgerEntryOf } from './ledger-entry.js'

const full: AttemptPayload = {
  attempt: 1,
  counted: true,
  run: 1,
  started_at: '2026-01-01T00:00:00.000Z',
  duration_ms: 12,
  status_code: 204,
  error: null,
  outcome: 'completed',
  signed_with: ['k1'],
  completes: true,
}

describe('ledger format 5: an attempt leaves out what is usual', () => {
  it.each([
    ['the usual first attempt: counted, run 1, no error', {}, ['counted', 'run', 'error']],
    ['an uncounted one names it', { counted: false, attempt: 0, outcome: 'snoozed' }, ['run', 'error']],
    ['a later run names it', { run: 2 }, ['counted', 'error']],
    ['a failed one names its error', { error: 'HTTP 500', status_code: 500, outcome: 'retry_scheduled' }, ['counted', 'run']],
  ] as const)('%s', (_name, over, leftOut) => {
    const payload: AttemptPayload = { ...full, ...over }
    const written = attemptPayloadWritten(payload)
    for (const key of leftOut) expect(written).not.toHaveProperty(key)
    expect(attemptPayloadOf(written)).toEqual(payload)
  })

  it('reads formats 1–4, which wrote every field, as they were', () => {
    expect(attemptPayloadOf({ ...full, counted: false, run: 3, error: 'x' })).toEqual({ ...full, counted: false, run: 3, error: 'x' })
  })
})

describe('ledger format 5: a claim names its lease length', () => {
  const at = new Date('2026-01-01T00:00:00.000Z')
  const claim = (payload: LedgerEntryOf<'delivery.claimed'>['payload']): LedgerEntryOf<'delivery.claimed'> => ({
    kind: 'delivery.claimed',
    occurred_at: at,
    owner_id: 'o',
    endpoint_id: '00000000-0000-4000-8000-000000000001',
    delivery_id: '00000000-0000-4000-8000-000000000002',
    event_id: 'evt',
    actor: 'worker:w1',
    payload,
  })
  const until = new Date(at.getTime() + 15_000)

  it.each([
    ['format 1–3: lease_until, the worker in the payload', { worker: 'worker:w1', lease_until: until.toISOString() }],
    ['format 4: lease_until', { lease_until: until.toISOString() }],
    ['format 5: lease_ms from occurred_at', { lease_ms: 15_000 }],
  ] as const)('%s: the same lease, on the delivery and on its endpoint', (_name, payload) => {
    const e = claim(payload)
    expect(claimLeaseUntil(e)).toEqual(until)
    const row = evolveDelivery(deliveryRowFixture({ id: e.delivery_id! }), e)!
    expect(row).toMatchObject({ state: 'running', claimed_by: 'worker:w1', lease_until: until })
    expect(evolveEndpoint(endpointRowFixture(), e)).toMatchObject({ busy_until: until, busy_delivery_id: e.delivery_id })
  })
})
