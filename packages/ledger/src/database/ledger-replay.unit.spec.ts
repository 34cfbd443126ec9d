import { describe, expect, it } from 'vitest'
import { evolveEndpoint, type EndpointRow, type LedgerEntry, type LedgerKind } from '@hookledger/core'
import { ENDPOINT_LEASE_KINDS } from './ledger-replay.js'

/** Every ledger kind, so a new one cannot be forgotten below. */
const ALL_KINDS = {
  'event.published': true, 'event.pruned': true, 'fanout.decided': true, 'endpoint.created': true,
  'endpoint.updated': true, 'endpoint.enabled': true, 'endpoint.disabled': true, 'endpoint.failing': true,
  'endpoint.recovered': true, 'endpoint.secret_rotated': true, 'endpoint.deleted': true,
  'delivery.enqueued': true, 'delivery.claimed': true, 'delivery.lease_busy': true, 'delivery.cool_down_released': true, 'delivery.attempted': true,
  'delivery.completed': true, 'delivery.retry_scheduled': true, 'delivery.snoozed': true,
  'delivery.discarded': true, 'delivery.settle_dropped': true, 'delivery.redelivered': true, 'token.issued': true, 'token.revoked': true,
  'access_code.put': true, 'access_code.revoked': true, 'embed.put': true, 'embed.deleted': true,
  'event_type.declared': true, 'event_type.updated': true, 'event_type.deprecated': true,
  'ledger.retention': true, 'deliveries.retired': true, 'endpoint.purged': true,
  'owner.limits_set': true, 'owner.suspended': true, 'owner.resumed': true,
} satisfies Record<LedgerKind, true>

describe('the endpoint stream of ledger replay', () => {
  it('reads every kind evolveEndpoint can act on: endpoint.* and the lease kinds', () => {
    const D = '11111111-1111-4111-8111-111111111111'
    const row = {
      id: '22222222-2222-4222-8222-222222222222',
      busy_until: new Date('2030-01-01T00:00:15Z'),
      busy_delivery_id: D,
    } as EndpointRow
    for (const kind of Object.keys(ALL_KINDS) as LedgerKind[]) {
      if (kind.startsWith('endpoint.') || (ENDPOINT_LEASE_KINDS as readonly string[]).includes(kind)) continue
      const e = {
        kind,
        occurred_at: new Date('2030-01-01T00:00:01Z'),
        owner_id: 'o',
        endpoint_id: row.id,
        delivery_id: D,
        event_id: 'evt_1',
        actor: 'system',
        payload: { lease_until: '2030-01-01T00:01:00Z', next_attempt_at: '2030-01-01T00:01:00Z', run: 2 },
      } as unknown as LedgerEntry
      expect(evolveEndpoint(row, e), kind).toBe(row)
      expect(evolveEndpoint(null, e), kind).toBeNull()
    }
  })
})
