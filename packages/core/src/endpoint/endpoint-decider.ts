/**
 * The endpoint state machine (the seed's "One endpoint" diagram) as pure functions returning
 * the ledger entries to append. States are derived from the row:
 * disabled = !enabled; failing = enabled && failing_since !== null; otherwise enabled.
 */
import type { DeliveryOutcome } from '../delivery/delivery-decider.js'
import { isEndpointFailure } from '../delivery/delivery-decider.js'
import { iso, type Actor, type LedgerEntry, type LedgerEntryOf, type LedgerPayloads } from '../model/ledger-entry.js'
import { bytesToBase64, type EndpointRow } from '../model/projections.js'
import { signsV1a, type SignatureScheme } from '../signing/signature-scheme.js'
import type { FollowRedirects } from '../delivery/attempt-result.js'
import type { EndpointMtls, EndpointOauth2, EndpointOrdering, EndpointRateLimit } from './endpoint-call-options.js'
import { canonicalJson } from '../model/canonical-json.js'

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
  readonly signature_scheme?: SignatureScheme
  /**
   * A fresh key pair the caller offers with a scheme that includes v1a; adopted only when the
   * endpoint has none (an endpoint keeps its key pair across scheme changes).
   */
  readonly fresh_v1a_key?: SealedV1aKey
  /** The whole new set of custom headers (checked by `checkEndpointHeaders`, secrets sealed). */
  readonly headers?: EndpointHeaderSet
  readonly follow_redirects?: FollowRedirects
  /** The rate limit (null removes it; a change starts a full bucket) and the ordering rule. */
  readonly rate_limit?: EndpointRateLimit | null
  readonly ordering?: EndpointOrdering
  /** Client authentication: checked, secrets sealed (ops); null removes it. */
  readonly mtls?: EndpointMtls | null
  readonly oauth2?: EndpointOauth2 | null
}

/** An endpoint's custom headers as the row and the ledger hold them. */
export interface EndpointHeaderSet {
  readonly headers: Readonly<Record<string, string>>
  /** Secret values sealed, base64 (a kept one is the row's own sealed value). */
  readonly secret_headers_sealed: Readonly<Record<string, string>>
}

/** Two name → value maps with the same entries, in any order. */
const sameMap = (a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean => {
  const keys = Object.keys(a)
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && b[k] === a[k])
}

/** A v1a key pair as the ledger and the row hold it: the `whsk_` key sealed, the `whpk_` key. */
export interface SealedV1aKey {
  readonly sealed: Uint8Array
  readonly public_key: string
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
  const changes: LedgerPayloads['endpoint.updated'] = {}
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
  if (patch.signature_scheme !== undefined && patch.signature_scheme !== row.signature_scheme) {
    changes.signature_scheme = patch.signature_scheme
    if (signsV1a(patch.signature_scheme) && row.v1a_key_sealed === null) {
      if (!patch.fresh_v1a_key) throw new Error(`scheme ${patch.signature_scheme} needs a v1a key pair`)
      changes.v1a_key_sealed = bytesToBase64(patch.fresh_v1a_key.sealed)
      changes.v1a_public_key = patch.fresh_v1a_key.public_key
    }
  }
  if (
    patch.headers !== undefined &&
    !(sameMap(patch.headers.headers, row.headers) && sameMap(patch.headers.secret_headers_sealed, row.secret_headers_sealed))
  ) {
    // Both maps travel together: a change replaces the whole set.
    changes.headers = { ...patch.headers.headers }
    changes.secret_headers_sealed = { ...patch.headers.secret_headers_sealed }
  }
  if (patch.follow_redirects !== undefined && patch.follow_redirects !== row.follow_redirects) {
    changes.follow_redirects = patch.follow_redirects
  }
  // Compared as canonical JSON: the row's jsonb comes back with its keys reordered.
  if (patch.rate_limit !== undefined && canonicalJson(patch.rate_limit) !== canonicalJson(row.rate_limit)) changes.rate_limit = patch.rate_limit
  if (patch.ordering !== undefined && patch.ordering !== row.ordering) changes.ordering = patch.ordering
  if (patch.mtls !== undefined && canonicalJson(patch.mtls) !== canonicalJson(row.mtls)) changes.mtls = patch.mtls
  if (patch.oauth2 !== undefined && canonicalJson(patch.oauth2) !== canonicalJson(row.oauth2)) changes.oauth2 = patch.oauth2
  if (Object.keys(changes).length > 0) out.push({ ...base, kind: 'endpoint.updated', payload: changes })
  if (patch.enabled === false && row.enabled) {
    out.push({ ...base, kind: 'endpoint.disabled', payload: { reason: 'disabled_by_owner' } })
  }
  if (patch.enabled === true && (!row.enabled || row.failing_since !== null || row.disabled_reason !== null)) {
    out.push({ ...base, kind: 'endpoint.enabled', payload: {} })
  }
  return out
}

/** A rotation's new keys: always an HMAC secret, and a key pair for an endpoint that has one. */
export interface RotationKeys {
  readonly secret_sealed: Uint8Array
  readonly secret_key_id: string
  /** Used only when the endpoint has a v1a key pair; the pair rotates with the secret. */
  readonly v1a_key?: SealedV1aKey
  /** How long the previous secret (and key) keep signing; 0 drops them at once. */
  readonly graceMs: number
}

/**
 * `webhooks.rotate_secret`: the new secret (and key pair) become current; the previous ones
 * keep signing until `now + graceMs`. A second rotation inside the window drops the oldest.
 */
/**
 * The second-rotation rule. While a previous secret still signs (its grace window has not
 * ended), another rotation would drop it at once — and with it every receiver not yet moved to
 * the current secret — so it is refused, naming when the window ends, unless the caller asks to
 * `expire_previous` now (the previous secret stops signing, the current one becomes the
 * previous, the new one current). After the window, a rotation is always allowed. Returns the
 * end of the window that blocks the rotation, or null.
 */
export function secretRotationBlockedUntil(
  row: Pick<EndpointRow, 'prev_secret_sealed' | 'prev_secret_expires_at'>,
  now: Date,
  expirePrevious: boolean,
): Date | null {
  if (expirePrevious || row.prev_secret_sealed === null || row.prev_secret_expires_at === null) return null
  return row.prev_secret_expires_at.getTime() > now.getTime() ? row.prev_secret_expires_at : null
}

export function decideSecretRotation(
  row: EndpointRow,
  keys: RotationKeys,
  now: Date,
  actor: Actor,
): LedgerEntryOf<'endpoint.secret_rotated'> {
  const keep = keys.graceMs > 0
  const expiresAt = keep ? iso(new Date(now.getTime() + keys.graceMs)) : null
  const payload: LedgerPayloads['endpoint.secret_rotated'] = {
    secret_sealed: bytesToBase64(keys.secret_sealed),
    secret_key_id: keys.secret_key_id,
    previous_key_id: row.secret_key_id,
    previous_sealed: keep ? bytesToBase64(row.secret_sealed) : null,
    previous_expires_at: expiresAt,
  }
  if (row.v1a_key_sealed !== null && row.v1a_public_key !== null) {
    if (!keys.v1a_key) throw new Error('the endpoint has a v1a key pair: a rotation needs a new one')
    payload.v1a_key_sealed = bytesToBase64(keys.v1a_key.sealed)
    payload.v1a_public_key = keys.v1a_key.public_key
    payload.previous_v1a_public_key = row.v1a_public_key
    payload.previous_v1a_sealed = keep ? bytesToBase64(row.v1a_key_sealed) : null
    payload.previous_v1a_expires_at = expiresAt
  }
  return { ...baseOf(row, now, actor), kind: 'endpoint.secret_rotated', payload }
}
