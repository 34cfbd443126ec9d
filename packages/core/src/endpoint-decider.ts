/**
 * The endpoint state machine (the seed's "One endpoint" diagram) as pure functions returning
 * the ledger entries to append. States are derived from the row:
 * disabled = !enabled; failing = enabled && failing_since !== null; otherwise enabled.
 */
import type { DeliveryOutcome } from './delivery-decider.js'
import { isEndpointFailure } from './delivery-decider.js'
import { iso, type Actor, type LedgerEntry } from './ledger-entry.js'
import type { EndpointRow } from './projections.js'

/** Continuous failure after which an endpoint is disabled. */
export const DISABLE_AFTER_FAILING_MS = 5 * 24 * 3_600_000

export type EndpointState = 'enabled' | 'failing' | 'disabled' | 'deleted'

/** The state an endpoint row is in. */
export function endpointState(row: Pick<EndpointRow, 'enabled' | 'failing_since' | 'deleted_at'>): EndpointState {
  if (row.deleted_at !== null) return 'deleted'
  if (!row.enabled) return 'disabled'
  return row.failing_since !== null ? 'failing' : 'enabled'
}

type Base = Omit<LedgerEntry, 'kind' | 'payload'>
const baseOf = (row: EndpointRow, now: Date, actor: Actor): Base => ({
  occurred_at: now,
  owner_id: row.owner_id,
  endpoint_id: row.id,
  delivery_id: null,
  event_id: null,
  actor,
})

/**
 * Endpoint effects of a delivery outcome: any success recovers a failing endpoint; any
 * non-success (410 and 429 included) marks it failing, and once it has been failing for five
 * days (checked on every non-success) disables it with the reason recorded.
 */
export function decideEndpointAfterOutcome(
  row: EndpointRow,
  outcome: DeliveryOutcome,
  now: Date,
  actor: Actor,
): LedgerEntry[] {
  if (row.deleted_at !== null) return []
  const base = baseOf(row, now, actor)
  if (outcome.type === 'completed') {
    return row.failing_since !== null
      ? [{ ...base, kind: 'endpoint.recovered', payload: { failing_since: iso(row.failing_since) } }]
      : []
  }
  if (!isEndpointFailure(outcome)) return []
  if (row.failing_since === null) {
    return [{ ...base, kind: 'endpoint.failing', payload: { since: iso(now) } }]
  }
  if (row.enabled && now.getTime() - row.failing_since.getTime() >= DISABLE_AFTER_FAILING_MS) {
    return [
      {
        ...base,
        kind: 'endpoint.disabled',
        payload: { reason: `failing since ${iso(row.failing_since)} (5 days without a success)` },
      },
    ]
  }
  return []
}

/** A change the owner asks for through `webhooks.update`. */
export interface EndpointPatch {
  readonly url?: string
  readonly description?: string
  readonly event_types?: readonly string[]
  readonly embed_id?: string | null
  readonly enabled?: boolean
}

/**
 * `webhooks.update`: field changes, then the switch. `enabled: false` disables (reason
 * `disabled_by_owner`); `enabled: true` re-enables and clears the failure state, also when the
 * endpoint was merely failing.
 */
export function decideEndpointUpdate(
  row: EndpointRow,
  patch: EndpointPatch,
  now: Date,
  actor: Actor,
): LedgerEntry[] {
  const base = baseOf(row, now, actor)
  const out: LedgerEntry[] = []
  const changes: { url?: string; description?: string; event_types?: string[]; embed_id?: string | null } = {}
  if (patch.url !== undefined && patch.url !== row.url) changes.url = patch.url
  if (patch.description !== undefined && patch.description !== row.description) {
    changes.description = patch.description
  }
  if (
    patch.event_types !== undefined &&
    JSON.stringify(patch.event_types) !== JSON.stringify(row.event_types)
  ) {
    changes.event_types = [...patch.event_types]
  }
  if (patch.embed_id !== undefined && patch.embed_id !== row.embed_id) changes.embed_id = patch.embed_id
  if (Object.keys(changes).length > 0) out.push({ ...base, kind: 'endpoint.updated', payload: changes })
  if (patch.enabled === false && row.enabled) {
    out.push({ ...base, kind: 'endpoint.disabled', payload: { reason: 'disabled_by_owner' } })
  }
  if (patch.enabled === true && (!row.enabled || row.failing_since !== null || row.disabled_reason !== null)) {
    out.push({ ...base, kind: 'endpoint.enabled', payload: {} })
  }
  return out
}
