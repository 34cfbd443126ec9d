/**
 * Projection rows for tests and benches (`@hookledger/testkit/row-fixtures`, not the
 * package index, so a bench can import it without vitest): one place that knows every column, so a new column is added once, not in every
 * table-driven spec.
 */
import type { DeliveryRow, EndpointRow } from '@hookledger/core'

export const FIXTURE_T0 = new Date('2026-01-01T00:00:00.000Z')
export const FIXTURE_ENDPOINT_ID = '00000000-0000-4000-8000-0000000000e1'
export const FIXTURE_DELIVERY_ID = '00000000-0000-4000-8000-0000000000d1'

/** A live, enabled, healthy endpoint of owner `o1` with no lease and no v1a keys. */
export function endpointRowFixture(over: Partial<EndpointRow> = {}): EndpointRow {
  const t = over.created_at ?? FIXTURE_T0
  return {
    id: FIXTURE_ENDPOINT_ID,
    owner_id: 'o1',
    url: 'https://hooks.example.com/in',
    description: '',
    event_types: ['*'],
    embed_id: null,
    secret_sealed: new Uint8Array([1]),
    secret_key_id: 'k1',
    prev_secret_sealed: null,
    prev_secret_key_id: null,
    prev_secret_expires_at: null,
    enabled: true,
    disabled_reason: null,
    failing_since: null,
    busy_until: null,
    busy_delivery_id: null,
    deleted_at: null,
    created_at: t,
    updated_at: t,
    signature_scheme: 'v1',
    v1a_key_sealed: null,
    v1a_public_key: null,
    prev_v1a_key_sealed: null,
    prev_v1a_public_key: null,
    prev_v1a_key_expires_at: null,
    headers: {},
    secret_headers_sealed: {},
    follow_redirects: 'same_origin',
    rate_limit: null,
    rate_tat: null,
    rate_adapted_per_second: null,
    ordering: 'none',
    mtls: null,
    oauth2: null,
    ...over,
  }
}

/** A pending delivery of event `evt_1` to the fixture endpoint, due at T0, in run 1. */
export function deliveryRowFixture(over: Partial<DeliveryRow> = {}): DeliveryRow {
  return {
    id: FIXTURE_DELIVERY_ID,
    owner_id: 'o1',
    endpoint_id: FIXTURE_ENDPOINT_ID,
    event_id: 'evt_1',
    event_type: 'booking.created',
    state: 'pending',
    run: 1,
    run_started_at: FIXTURE_T0,
    attempts: 0,
    snoozes: 0,
    snoozed_ms: 0,
    next_attempt_at: FIXTURE_T0,
    claimed_by: null,
    lease_until: null,
    last_status: null,
    last_error: null,
    created_at: FIXTURE_T0,
    updated_at: FIXTURE_T0,
    ...over,
  }
}
