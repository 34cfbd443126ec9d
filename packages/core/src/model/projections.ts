/**
 * The projections and their evolve functions. The store writes exactly what these return, and
 * `ledger replay` folds the whole ledger through the same functions, so the live tables and a
 * rebuild can only differ if something wrote a table behind the ledger's back.
 */
import type { LedgerEntry } from './ledger-entry.js'
import { attemptPayloadOf, claimLeaseUntil } from './ledger-format.js'
import { DEFAULT_SIGNATURE_SCHEME, type SignatureScheme } from '../signing/signature-scheme.js'
import { DEFAULT_FOLLOW_REDIRECTS, type FollowRedirects } from '../delivery/attempt-result.js'
import { DEFAULT_ENDPOINT_ORDERING, type EndpointMtls, type EndpointOauth2, type EndpointOrdering, type EndpointRateLimit } from '../endpoint/endpoint-call-options.js'

/** A row of `endpoints`. */
export interface EndpointRow {
  id: string
  owner_id: string
  url: string
  description: string
  event_types: string[]
  embed_id: string | null
  secret_sealed: Uint8Array
  secret_key_id: string
  prev_secret_sealed: Uint8Array | null
  prev_secret_key_id: string | null
  prev_secret_expires_at: Date | null
  enabled: boolean
  disabled_reason: string | null
  failing_since: Date | null
  busy_until: Date | null
  busy_delivery_id: string | null
  deleted_at: Date | null
  created_at: Date
  updated_at: Date
  signature_scheme: SignatureScheme
  /** The sealed `whsk_` key; null until the scheme first includes v1a. */
  v1a_key_sealed: Uint8Array | null
  /** Its `whpk_` public key. */
  v1a_public_key: string | null
  prev_v1a_key_sealed: Uint8Array | null
  prev_v1a_public_key: string | null
  prev_v1a_key_expires_at: Date | null
  /** Custom request headers sent on every attempt: plain values by (lower-cased) name. */
  headers: Record<string, string>
  /** Secret custom headers: each value sealed with the master key, base64. */
  secret_headers_sealed: Record<string, string>
  follow_redirects: FollowRedirects
  /** null: no limit. */
  rate_limit: EndpointRateLimit | null
  /** The rate limit's bucket as one timestamp (GCRA's theoretical arrival time), moved by claims. */
  rate_tat: Date | null
  /** With an adaptive limit: the rate the receiver's 429/503 lowered it to (null: as configured). */
  rate_adapted_per_second: number | null
  ordering: EndpointOrdering
  mtls: EndpointMtls | null
  oauth2: EndpointOauth2 | null
}

export type DeliveryState = 'pending' | 'running' | 'retryable' | 'completed' | 'discarded'

/** A row of `deliveries`. */
export interface DeliveryRow {
  id: string
  owner_id: string
  endpoint_id: string
  event_id: string
  event_type: string
  state: DeliveryState
  run: number
  run_started_at: Date
  attempts: number
  /** Retry-After snoozes in this run, and their total delay (the snooze budget). */
  snoozes: number
  snoozed_ms: number
  next_attempt_at: Date | null
  claimed_by: string | null
  lease_until: Date | null
  last_status: number | null
  last_error: string | null
  created_at: Date
  updated_at: Date
}

/**
 * A row of the attempt history (`delivery_attempts`, a view over `delivery.attempted` entries),
 * keyed by the position of its entry.
 */
export interface AttemptRow {
  ledger_position: string
  delivery_id: string
  attempt: number
  counted: boolean
  run: number
  owner_id: string
  started_at: Date
  duration_ms: number
  status_code: number | null
  error: string | null
  outcome: string
  signed_with: string[]
  actor: string
}

const date = (s: string): Date => new Date(s)

/** Base64 <-> bytes for sealed secrets carried in JSON payloads. */
export const bytesToBase64 = (b: Uint8Array): string => Buffer.from(b).toString('base64')
export const base64ToBytes = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'base64'))

const sealedOrNull = (s: string | null | undefined): Uint8Array | null =>
  s === null || s === undefined ? null : base64ToBytes(s)

/**
 * Applies one ledger entry to an endpoint row. Entries about deliveries matter to the endpoint
 * only through its lease (`busy_until`), taken by a claim and released by whatever ends that
 * delivery's run on the endpoint. Null is "no row": from a row, only `endpoint.purged` leads
 * there (the row is removed); from none, every entry but `endpoint.created` leaves it absent.
 */
export function evolveEndpoint(row: EndpointRow | null, e: LedgerEntry): EndpointRow | null {
  const at = e.occurred_at
  if (e.kind === 'endpoint.created') {
    return {
      id: e.endpoint_id!,
      owner_id: e.owner_id,
      url: e.payload.url,
      description: e.payload.description,
      event_types: [...e.payload.event_types],
      embed_id: e.payload.embed_id,
      secret_sealed: base64ToBytes(e.payload.secret_sealed),
      secret_key_id: e.payload.secret_key_id,
      prev_secret_sealed: null,
      prev_secret_key_id: null,
      prev_secret_expires_at: null,
      enabled: true,
      disabled_reason: null,
      failing_since: null,
      busy_until: null,
      busy_delivery_id: null,
      deleted_at: null,
      created_at: at,
      updated_at: at,
      // Entries written before v1a existed carry none of these: v1, no key pair.
      signature_scheme: e.payload.signature_scheme ?? DEFAULT_SIGNATURE_SCHEME,
      v1a_key_sealed: sealedOrNull(e.payload.v1a_key_sealed),
      v1a_public_key: e.payload.v1a_public_key ?? null,
      prev_v1a_key_sealed: null,
      prev_v1a_public_key: null,
      prev_v1a_key_expires_at: null,
      // Entries written before custom headers and the redirect rule existed: none, same origin.
      headers: { ...e.payload.headers },
      secret_headers_sealed: { ...e.payload.secret_headers_sealed },
      follow_redirects: e.payload.follow_redirects ?? DEFAULT_FOLLOW_REDIRECTS,
      // Entries written before these existed: no limit, no ordering, no client authentication.
      rate_limit: e.payload.rate_limit ?? null,
      rate_tat: null,
      rate_adapted_per_second: null,
      ordering: e.payload.ordering ?? DEFAULT_ENDPOINT_ORDERING,
      mtls: e.payload.mtls ?? null,
      oauth2: e.payload.oauth2 ?? null,
    }
  }
  if (row === null) return null
  switch (e.kind) {
    case 'endpoint.updated': {
      const p = e.payload
      return {
        ...row,
        url: p.url ?? row.url,
        description: p.description ?? row.description,
        event_types: p.event_types ? [...p.event_types] : row.event_types,
        embed_id: p.embed_id !== undefined ? p.embed_id : row.embed_id,
        signature_scheme: p.signature_scheme ?? row.signature_scheme,
        // A scheme change that needs a key pair the endpoint lacks brings one.
        v1a_key_sealed: p.v1a_key_sealed !== undefined ? base64ToBytes(p.v1a_key_sealed) : row.v1a_key_sealed,
        v1a_public_key: p.v1a_public_key ?? row.v1a_public_key,
        headers: p.headers ? { ...p.headers } : row.headers,
        secret_headers_sealed: p.secret_headers_sealed ? { ...p.secret_headers_sealed } : row.secret_headers_sealed,
        follow_redirects: p.follow_redirects ?? row.follow_redirects,
        // A changed limit starts a full bucket at the configured rate.
        ...(p.rate_limit !== undefined ? { rate_limit: p.rate_limit, rate_tat: null, rate_adapted_per_second: null } : {}),
        ordering: p.ordering ?? row.ordering,
        mtls: p.mtls !== undefined ? p.mtls : row.mtls,
        oauth2: p.oauth2 !== undefined ? p.oauth2 : row.oauth2,
        updated_at: at,
      }
    }
    case 'endpoint.enabled':
      return { ...row, enabled: true, disabled_reason: null, failing_since: null, updated_at: at }
    case 'endpoint.disabled':
      return { ...row, enabled: false, disabled_reason: e.payload.reason, updated_at: at }
    case 'endpoint.failing':
      return { ...row, failing_since: date(e.payload.since), updated_at: at }
    case 'endpoint.recovered':
      return { ...row, failing_since: null, updated_at: at }
    case 'endpoint.secret_rotated':
      return {
        ...row,
        secret_sealed: base64ToBytes(e.payload.secret_sealed),
        secret_key_id: e.payload.secret_key_id,
        prev_secret_sealed: e.payload.previous_sealed ? base64ToBytes(e.payload.previous_sealed) : null,
        prev_secret_key_id: e.payload.previous_sealed ? e.payload.previous_key_id : null,
        prev_secret_expires_at: e.payload.previous_expires_at ? date(e.payload.previous_expires_at) : null,
        // The key pair rotates with the secret when the endpoint has one (entries without v1a
        // fields leave these columns as they were).
        ...(e.payload.v1a_key_sealed !== undefined && {
          v1a_key_sealed: base64ToBytes(e.payload.v1a_key_sealed),
          v1a_public_key: e.payload.v1a_public_key!,
          prev_v1a_key_sealed: sealedOrNull(e.payload.previous_v1a_sealed),
          prev_v1a_public_key: e.payload.previous_v1a_sealed ? e.payload.previous_v1a_public_key! : null,
          prev_v1a_key_expires_at: e.payload.previous_v1a_expires_at ? date(e.payload.previous_v1a_expires_at) : null,
        }),
        updated_at: at,
      }
    case 'endpoint.deleted':
      return { ...row, deleted_at: at, updated_at: at }
    case 'endpoint.purged':
      return null // the row leaves the projection; its entries stay in the ledger
    case 'delivery.claimed':
      return {
        ...row,
        busy_until: claimLeaseUntil(e),
        busy_delivery_id: e.delivery_id,
        ...(e.payload.rate_tat !== undefined ? { rate_tat: date(e.payload.rate_tat) } : {}),
      }
    case 'delivery.attempted':
    case 'delivery.discarded':
    case 'delivery.lease_busy': {
      // An adaptive rate limit moves with the answers (rate-limit.ts adaptedRateAfter).
      const adapted = e.kind === 'delivery.attempted' ? e.payload.rate_adapted_per_second : undefined
      const paced = adapted !== undefined ? { ...row, rate_adapted_per_second: adapted } : row
      // Only the delivery holding the lease may release it: an expired lease may already have
      // been taken over by another delivery of this endpoint.
      return paced.busy_delivery_id !== null && paced.busy_delivery_id === e.delivery_id
        ? { ...paced, busy_until: null, busy_delivery_id: null }
        : paced
    }
    default:
      return row
  }
}

/**
 * Applies one ledger entry to a delivery row. Null is "no row": `deliveries.retired` removes the
 * row it is applied to (it names many deliveries; `applyEntry` applies it to each of them).
 */
export function evolveDelivery(row: DeliveryRow | null, e: LedgerEntry): DeliveryRow | null {
  const at = e.occurred_at
  if (e.kind === 'delivery.enqueued') {
    // A fan-out's decision keeps the delivery its pair already has (fanout-enqueues.ts).
    if (e.payload.by_fanout === true && row !== null) return row
    return {
      id: e.delivery_id!,
      owner_id: e.owner_id,
      endpoint_id: e.endpoint_id!,
      event_id: e.event_id!,
      event_type: e.payload.event_type,
      state: 'pending',
      run: 1,
      run_started_at: at,
      attempts: 0,
      snoozes: 0,
      snoozed_ms: 0,
      next_attempt_at: date(e.payload.next_attempt_at),
      claimed_by: null,
      lease_until: null,
      last_status: null,
      last_error: null,
      created_at: at,
      updated_at: at,
    }
  }
  if (row === null) return null
  const released = { claimed_by: null, lease_until: null }
  switch (e.kind) {
    case 'delivery.claimed':
      return {
        ...row,
        state: 'running',
        // Formats 1–3 named the worker in the payload too; from format 4 it is the actor alone.
        claimed_by: e.payload.worker ?? e.actor,
        lease_until: claimLeaseUntil(e),
        updated_at: at,
      }
    case 'delivery.lease_busy':
      return {
        ...row,
        ...released,
        state: 'pending',
        next_attempt_at: date(e.payload.next_attempt_at),
        updated_at: at,
      }
    case 'delivery.cool_down_released':
      return { ...row, next_attempt_at: date(e.payload.next_attempt_at), updated_at: at }
    case 'delivery.attempted': {
      const p = attemptPayloadOf(e.payload)
      return {
        ...row,
        ...released,
        attempts: p.counted ? p.attempt : row.attempts,
        last_status: p.status_code,
        last_error: p.error,
        ...(p.completes ? { state: 'completed' as const, next_attempt_at: null } : {}),
        updated_at: at,
      }
    }
    case 'delivery.completed':
      return { ...row, ...released, state: 'completed', next_attempt_at: null, updated_at: at }
    case 'delivery.retry_scheduled':
      return {
        ...row,
        ...released,
        state: 'retryable',
        next_attempt_at: date(e.payload.next_attempt_at),
        updated_at: at,
      }
    case 'delivery.snoozed':
      return {
        ...row,
        ...released,
        state: 'pending',
        snoozes: row.snoozes + 1,
        snoozed_ms: row.snoozed_ms + e.payload.retry_after_ms,
        next_attempt_at: date(e.payload.next_attempt_at),
        updated_at: at,
      }
    case 'delivery.discarded':
      return {
        ...row,
        ...released,
        state: 'discarded',
        next_attempt_at: null,
        last_error: row.last_error ?? e.payload.reason,
        updated_at: at,
      }
    case 'delivery.redelivered':
      return {
        ...row,
        ...released,
        state: 'pending',
        run: e.payload.run,
        run_started_at: at,
        attempts: 0,
        snoozes: 0,
        snoozed_ms: 0,
        next_attempt_at: date(e.payload.next_attempt_at),
        last_status: null,
        last_error: null,
        updated_at: at,
      }
    case 'deliveries.retired':
      return null
    default:
      return row
  }
}

/** The attempt-history row a `delivery.attempted` entry adds, if any. */
export function attemptRowOf(e: LedgerEntry, position: string): AttemptRow | null {
  if (e.kind !== 'delivery.attempted') return null
  const p = attemptPayloadOf(e.payload)
  return {
    ledger_position: position,
    delivery_id: e.delivery_id!,
    attempt: p.attempt,
    counted: p.counted,
    run: p.run,
    owner_id: e.owner_id,
    started_at: date(p.started_at),
    duration_ms: p.duration_ms,
    status_code: p.status_code,
    error: p.error,
    outcome: p.outcome,
    signed_with: [...p.signed_with],
    actor: e.actor,
  }
}
