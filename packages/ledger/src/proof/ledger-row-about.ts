import { deliveryIdFor } from '@hookledger/core'
import type { ChainRow } from './ledger-row-encoding.js'

/**
 * Whether a ledger row is about a delivery: it names it, or (ledger format 3) it is the fan-out
 * decision that enqueued it, naming its endpoint among those it matched — the delivery's id
 * derives from the pair (core fanout-enqueues.ts). What a receipt's rows and an audit of a file
 * by delivery hold to.
 */
export function ledgerRowIsAbout(row: Pick<ChainRow, 'kind' | 'delivery_id' | 'event_id' | 'payload'>, deliveryId: string): boolean {
  if (row.delivery_id === deliveryId) return true
  const p = row.payload as { enqueues?: unknown; matched?: unknown } | null
  if (row.kind !== 'fanout.decided' || row.delivery_id !== null || row.event_id === null || p?.enqueues !== true || !Array.isArray(p.matched)) return false
  const eventId = row.event_id
  return p.matched.some((endpointId) => typeof endpointId === 'string' && deliveryIdFor(endpointId, eventId) === deliveryId)
}
