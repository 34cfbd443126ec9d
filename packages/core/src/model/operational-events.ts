/**
 * hookledger's own news for the owner, read off the entries a settle writes: an endpoint went
 * failing, was disabled, recovered; a delivery was given up. Each becomes a thin event of the
 * owner's (subject names the endpoint or delivery; data carries ids and the reason, never
 * content), stored in the same transaction as the transition and delivered like any event to
 * the owner's endpoints that subscribe by name (see `EventTypeDeclaration.publishedBy`).
 */
import type { LedgerEntry } from './ledger-entry.js'

export interface OperationalEvent {
  readonly owner_id: string
  readonly type: 'webhook.endpoint.failing' | 'webhook.endpoint.disabled' | 'webhook.endpoint.recovered' | 'webhook.delivery.exhausted'
  readonly subject: string
  readonly data: Record<string, string>
}

/** The reasons a delivery is given up after trying (not a discard for a 4xx or a deleted endpoint). */
const EXHAUSTED = new Set(['max_attempts', 'retry_window_exceeded'])

/**
 * The operational events these entries imply. `aboutOperational(deliveryId)` says whether a
 * delivery carried an operational event itself: its exhaustion is not announced again, so a
 * receiver that refuses the news cannot feed a chain of news about the news.
 */
export function operationalEventsOf(entries: readonly LedgerEntry[], aboutOperational: (deliveryId: string) => boolean): OperationalEvent[] {
  const out: OperationalEvent[] = []
  for (const e of entries) {
    const endpoint = { owner_id: e.owner_id, subject: `webhook://endpoints/${e.endpoint_id}` }
    switch (e.kind) {
      case 'endpoint.failing':
        out.push({ ...endpoint, type: 'webhook.endpoint.failing', data: { endpoint_id: e.endpoint_id!, failing_since: e.payload.since } })
        break
      case 'endpoint.disabled':
        out.push({ ...endpoint, type: 'webhook.endpoint.disabled', data: { endpoint_id: e.endpoint_id!, reason: e.payload.reason } })
        break
      case 'endpoint.recovered':
        out.push({ ...endpoint, type: 'webhook.endpoint.recovered', data: { endpoint_id: e.endpoint_id!, failing_since: e.payload.failing_since } })
        break
      case 'delivery.discarded':
        if (EXHAUSTED.has(e.payload.reason) && !aboutOperational(e.delivery_id!)) {
          out.push({
            owner_id: e.owner_id,
            type: 'webhook.delivery.exhausted',
            subject: `webhook://deliveries/${e.delivery_id}`,
            data: { delivery_id: e.delivery_id!, endpoint_id: e.endpoint_id!, event_id: e.event_id!, reason: e.payload.reason },
          })
        }
        break
    }
  }
  return out
}
