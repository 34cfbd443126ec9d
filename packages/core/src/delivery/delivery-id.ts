import { createHash } from 'node:crypto'

/**
 * The id of the one delivery of an event to an endpoint: a name-based UUID (RFC 9562 version 8,
 * from SHA-256 of the pair). Because the pair determines the id, the primary key alone makes
 * fan-out idempotent — a second fan-out of the same event produces the same ids and inserts
 * nothing — so the deliveries table needs no second unique index on (endpoint, event).
 */
export function deliveryIdFor(endpointId: string, eventId: string): string {
  const h = createHash('sha256').update(`${endpointId}\u0000${eventId}`, 'utf8').digest()
  h[6] = (h[6]! & 0x0f) | 0x80 // version 8: custom (hash-based)
  h[8] = (h[8]! & 0x3f) | 0x80 // RFC 9562 variant
  const hex = h.subarray(0, 16).toString('hex')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`
}
