import { sha256, sha256Prefixed } from './sha256.js'
import { canonicalJson } from '@hookledger/core'

/**
 * The ledger's published row encoding (`hookledger.ledger.v1`): the bytes every chain hash,
 * Merkle leaf and receipt proof is computed over. Changing anything here changes every hash
 * ever published, so a new encoding gets a new tag instead.
 *
 * Row bytes: the UTF-8 of the canonical JSON (see canonical-json.ts, RFC 8785 style) of the
 * 11-element array
 *
 *     ["hookledger.ledger.v1", position, tx_id, occurred_at, owner_id, kind,
 *      endpoint_id, delivery_id, event_id, payload, actor]
 *
 * where position and tx_id are canonical decimal strings (`0` or `[1-9][0-9]*`, the text
 * PostgreSQL prints for bigint and xid8), occurred_at is UTC with exactly six fractional
 * digits (`2026-12-01T09:00:00.123000Z`), endpoint_id, delivery_id and event_id are strings
 * or `null`, payload is the parsed jsonb value (canonicalised, so key order and number
 * spelling in the database do not matter), and the rest are strings. Example (one line, no
 * whitespace; the unit spec pins its hashes):
 *
 *     ["hookledger.ledger.v1","42","1007","2026-12-01T09:00:00.123000Z","own_1",
 *      "endpoint.disabled","7c9e6679-7425-40de-944b-e07fc1f90ae7",null,null,
 *      {"reason":"manual"},"operator"]
 *
 * Leaf hash (RFC 6962 §2.1): SHA-256(0x00 ‖ row bytes).
 * Chain: head₀ = 32 zero bytes; headₙ = SHA-256(headₙ₋₁ ‖ row bytesₙ), rows in chain order
 *   ((tx_id, position) ascending).
 * Content hash: SHA-256 of the UTF-8 of the canonical JSON of
 *
 *     ["hookledger.ledger.content.v1", occurred_at, owner_id, kind,
 *      endpoint_id, delivery_id, event_id, payload, actor]
 *
 *   i.e. the row without its place in the chain, to tell "this row moved" from "this row
 *   changed".
 *
 * Every function here validates the row and throws on one that does not fit this shape: an
 * encoding that accepted "007" or a local time would give one row two hashes.
 */

/** A ledger row exactly as the chain sees it: text forms read from PostgreSQL, so nothing is lost. */
export interface ChainRow {
  /** bigint, decimal text */
  readonly position: string
  /** xid8, decimal text */
  readonly tx_id: string
  /** UTC, microseconds: '2026-12-01T09:00:00.123000Z' (exactly this shape) */
  readonly occurred_at: string
  readonly owner_id: string
  readonly kind: string
  readonly endpoint_id: string | null
  readonly delivery_id: string | null
  readonly event_id: string | null
  /** parsed JSON */
  readonly payload: unknown
  readonly actor: string
}

/** Tag of the row bytes: the first element of the encoded array. */
export const LEDGER_ROW_FORMAT = 'hookledger.ledger.v1'

/** Tag of the content-hash bytes. */
export const LEDGER_CONTENT_FORMAT = 'hookledger.ledger.content.v1'

/** The chain head before the first row: 32 zero bytes. */
export const CHAIN_GENESIS: Uint8Array = new Uint8Array(32)

const CANONICAL_DECIMAL = /^(0|[1-9][0-9]*)$/
// Calendar ranges too, so an impossible time is refused rather than hashed; PostgreSQL has no
// leap seconds, so :60 never occurs.
const OCCURRED_AT =
  /^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]\.[0-9]{6}Z$/

const utf8 = new TextEncoder()

/** The canonical bytes of `row` (see the header comment). Throws on a malformed row. */
export function ledgerRowBytes(row: ChainRow): Uint8Array {
  checkRow(row)
  return utf8.encode(
    canonicalJson([LEDGER_ROW_FORMAT, row.position, row.tx_id, ...contentFields(row)]),
  )
}

/**
 * The row whose canonical bytes these are (a receipt's `extra`), or null when they are not a
 * row's canonical bytes exactly: re-encoding must give back the same bytes, so one row never
 * has two spellings.
 */
export function ledgerRowFromBytes(bytes: Uint8Array): ChainRow | null {
  try {
    const parsed: unknown = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes))
    if (!Array.isArray(parsed) || parsed.length !== 11 || parsed[0] !== LEDGER_ROW_FORMAT) return null
    const [, position, tx_id, occurred_at, owner_id, kind, endpoint_id, delivery_id, event_id, payload, actor] = parsed as unknown[]
    const row = { position, tx_id, occurred_at, owner_id, kind, endpoint_id, delivery_id, event_id, payload, actor } as ChainRow
    const again = ledgerRowBytes(row)
    return again.length === bytes.length && again.every((b, i) => b === bytes[i]) ? row : null
  } catch {
    return null
  }
}

/** RFC 6962 leaf hash of `row`: SHA-256(0x00 ‖ ledgerRowBytes(row)). */
export function ledgerLeafHash(row: ChainRow): Uint8Array {
  const bytes = ledgerRowBytes(row)
  return sha256Prefixed(0x00, bytes)
}

/**
 * The row's entry in the transparency log: SHA-256(ledgerRowBytes(row)), 32 bytes. The public
 * tiles and entry bundles carry only these, never the row; whoever holds the row recomputes it.
 */
export function ledgerRowCommitment(row: ChainRow): Uint8Array {
  return sha256(ledgerRowBytes(row))
}

/** The log's leaf hash of an entry: SHA-256(0x00 ‖ commitment) (RFC 6962 §2.1). */
export function logLeafHash(commitment: Uint8Array): Uint8Array {
  return sha256Prefixed(0x00, commitment)
}

/** SHA-256 of the row without position and tx_id: the same for a row wherever it sits. */
export function ledgerContentHash(row: ChainRow): Uint8Array {
  checkRow(row)
  return sha256(utf8.encode(canonicalJson([LEDGER_CONTENT_FORMAT, ...contentFields(row)])))
}

/** The chain head after `row`: SHA-256(prev ‖ ledgerRowBytes(row)). */
export function chainNext(prev: Uint8Array, row: ChainRow): Uint8Array {
  return chainNextBytes(prev, ledgerRowBytes(row))
}

/** chainNext over a row's bytes already encoded (the sealer encodes each row once). */
export function chainNextBytes(prev: Uint8Array, bytes: Uint8Array): Uint8Array {
  if (!(prev instanceof Uint8Array) || prev.length !== 32) {
    throw new Error('chain head must be 32 bytes')
  }
  return sha256(prev, bytes)
}

/** What sealing a row needs, from one encoding: its segment leaf hash and its log commitment. */
export function ledgerRowSealHashes(bytes: Uint8Array): { segmentLeaf: Uint8Array; commitment: Uint8Array } {
  return { segmentLeaf: sha256Prefixed(0x00, bytes), commitment: sha256(bytes) }
}

/**
 * The leaf hash `row` would have at another place in the chain, as a function of that place
 * (position, tx_id): what tells a row that moved from a row that changed. The content is
 * encoded once however many places are tried, relying on canonical JSON of an array being its
 * elements' texts joined by commas inside brackets.
 */
export function ledgerLeafHashAt(row: ChainRow): (position: string, txId: string) => Uint8Array {
  checkRow(row)
  const contentTail = canonicalJson(contentFields(row)).slice(1) // `elements…]`
  const prefix = `[${JSON.stringify(LEDGER_ROW_FORMAT)},`
  return (position, txId) => {
    checkDecimal('position', position)
    checkDecimal('tx_id', txId)
    const text = `${prefix}${JSON.stringify(position)},${JSON.stringify(txId)},${contentTail}`
    return sha256Prefixed(0x00, utf8.encode(text))
  }
}

function contentFields(row: ChainRow): unknown[] {
  return [
    row.occurred_at,
    row.owner_id,
    row.kind,
    row.endpoint_id,
    row.delivery_id,
    row.event_id,
    row.payload,
    row.actor,
  ]
}

/**
 * Types are checked at run time because rows also come from export files: a missing
 * endpoint_id must not silently encode as the `null` of a row that has none.
 */
function checkRow(row: ChainRow): void {
  if (typeof row !== 'object' || row === null) throw new Error('ledger row must be an object')
  checkDecimal('position', row.position)
  checkDecimal('tx_id', row.tx_id)
  if (typeof row.occurred_at !== 'string' || !OCCURRED_AT.test(row.occurred_at)) {
    throw new Error(
      `ledger row occurred_at must look like 2026-12-01T09:00:00.123000Z, got ${shown(row.occurred_at)}`,
    )
  }
  for (const field of ['owner_id', 'kind', 'actor'] as const) {
    if (typeof row[field] !== 'string') {
      throw new Error(`ledger row ${field} must be a string, got ${shown(row[field])}`)
    }
  }
  for (const field of ['endpoint_id', 'delivery_id', 'event_id'] as const) {
    const value: unknown = row[field]
    if (value !== null && typeof value !== 'string') {
      throw new Error(`ledger row ${field} must be a string or null, got ${shown(value)}`)
    }
  }
  if (row.payload === undefined) throw new Error('ledger row payload is missing')
}

function checkDecimal(field: 'position' | 'tx_id', value: unknown): void {
  if (typeof value !== 'string' || !CANONICAL_DECIMAL.test(value)) {
    throw new Error(`ledger row ${field} must be a canonical decimal string, got ${shown(value)}`)
  }
}

function shown(value: unknown): string {
  if (typeof value === 'string') {
    return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)
  }
  return value === null ? 'null' : typeof value
}

