import type { OwnerLimitsPatch } from '../owner/owner-limits.js'
/**
 * The ledger's vocabulary. Every change of an endpoint or a delivery is one or more of these
 * entries, appended in the same transaction as the projection rows they imply. Payloads are
 * JSON-safe (timestamps as ISO strings) because they are stored as jsonb and replayed later.
 */

import type { FollowRedirects } from '../delivery/attempt-result.js'
import type { SignatureScheme } from '../signing/signature-scheme.js'
import type { EndpointMtls, EndpointOauth2, EndpointOrdering, EndpointRateLimit } from '../endpoint/endpoint-call-options.js'

/** Who caused an entry: `worker:<id>`, `owner:<token id>`, `operator`, `system`. */
export type Actor = string

/** Payload of each ledger kind. */
export interface LedgerPayloads {
  'event.published': { type: string; subject: string }
  'event.pruned': { published_at: string }
  'fanout.decided': {
    type: string
    matched: string[]
    denied: { endpoint_id: string; reason: string }[]
    skipped_internal?: boolean
    /**
     * Ledger format 3 (fanout-enqueues.ts): this entry is also the enqueue of one delivery of
     * the event to each matched endpoint that has none yet, so no `delivery.enqueued` row
     * follows it. Absent in entries written before, each of whose deliveries has its own
     * `delivery.enqueued` row.
     */
    enqueues?: true
    /** The matched endpoints that were failing: their delivery waits until `until` (format 3). */
    cool_down?: { endpoints: string[]; until: string }
  }
  'endpoint.created': {
    url: string
    description: string
    event_types: string[]
    embed_id: string | null
    secret_sealed: string
    secret_key_id: string
    /** Absent in entries written before v1a existed (= v1, no key pair). */
    signature_scheme?: SignatureScheme
    /** The sealed `whsk_` key (never in clear) and its `whpk_` public key, or null. */
    v1a_key_sealed?: string | null
    v1a_public_key?: string | null
    /**
     * Custom request headers: plain ones by name, secret ones sealed (base64, never in clear).
     * Absent in entries written before they existed (= none), as is `follow_redirects`
     * (= `same_origin`).
     */
    headers?: Record<string, string>
    secret_headers_sealed?: Record<string, string>
    follow_redirects?: FollowRedirects
    /** Absent in entries written before they existed: no limit, `none`, no client authentication. */
    rate_limit?: EndpointRateLimit | null
    ordering?: EndpointOrdering
    mtls?: EndpointMtls | null
    oauth2?: EndpointOauth2 | null
  }
  'endpoint.updated': {
    url?: string
    description?: string
    event_types?: string[]
    embed_id?: string | null
    signature_scheme?: SignatureScheme
    /** A key pair, when the new scheme needs one and the endpoint had none. */
    v1a_key_sealed?: string
    v1a_public_key?: string
    /** The whole new set of custom headers, both maps together (a change replaces them). */
    headers?: Record<string, string>
    secret_headers_sealed?: Record<string, string>
    follow_redirects?: FollowRedirects
    /** Present when changed; null removes it. */
    rate_limit?: EndpointRateLimit | null
    ordering?: EndpointOrdering
    mtls?: EndpointMtls | null
    oauth2?: EndpointOauth2 | null
  }
  'endpoint.enabled': Record<string, never>
  'endpoint.disabled': { reason: string }
  'endpoint.failing': { since: string }
  'endpoint.recovered': { failing_since: string }
  'endpoint.secret_rotated': {
    secret_sealed: string
    secret_key_id: string
    previous_key_id: string
    previous_sealed: string | null
    previous_expires_at: string | null
    /** Present when the endpoint has a v1a key pair: it rotates with the secret. */
    v1a_key_sealed?: string
    v1a_public_key?: string
    previous_v1a_public_key?: string
    previous_v1a_sealed?: string | null
    previous_v1a_expires_at?: string | null
  }
  'endpoint.deleted': Record<string, never>
  'delivery.enqueued': {
    event_type: string
    next_attempt_at: string
    cool_down: boolean
    /** Present when `webhooks.recover` made it (not the fan-out): the window and why it was missed. */
    recovered?: RecoveredPayload
    /**
     * Never stored: an enqueue a format-3 `fanout.decided` implies (`impliedEnqueues`), which
     * makes the delivery only if its pair has none (a fan-out keeps an existing delivery).
     */
    by_fanout?: true
  }
  /**
   * `rate_tat`: the endpoint's rate-limit bucket after this claim (endpoints with a limit).
   * `worker`: the claiming worker, in ledger formats 1–3 only; from format 4 (migration 0022) it
   * is the entry's actor, written once.
   * The lease: `lease_until` in formats 1–4; from format 5 (migration 0023) its length,
   * `lease_ms`, from the entry's `occurred_at` (`claimLeaseUntil` reads either).
   */
  'delivery.claimed': { worker?: string; lease_until?: string; lease_ms?: number; rate_tat?: string }
  /** `reason: rate_limited`: the endpoint's rate-limit bucket held it back, not another delivery's lease. */
  'delivery.lease_busy': { next_attempt_at: string; reason?: 'rate_limited' }
  /**
   * The endpoint recovered: a delivery its failing cool-down (or a busy-lease snooze) still held
   * back is due now, not at `held_until`. No attempt is spent; a Retry-After snooze is never released.
   */
  'delivery.cool_down_released': { next_attempt_at: string; held_until: string }
  /**
   * From ledger format 5 (migration 0023) an attempt leaves out what is usual: `counted` when
   * true, `run` when 1, `error` when null. `attemptPayloadOf` fills them in; formats 1–4 always
   * wrote them.
   */
  'delivery.attempted': {
    attempt: number
    counted?: boolean
    run?: number
    started_at: string
    duration_ms: number
    status_code: number | null
    error?: string | null
    outcome: AttemptOutcomeName
    signed_with: string[]
    address?: string | null
    response_excerpt?: string
    /** The receiver's response headers, capped (`keptResponseHeaders`); absent when none. */
    response_headers?: Record<string, string>
    /** Present (true) when the answer's body was longer than `response_excerpt`. */
    response_truncated?: true
    /**
     * Ledger format 2: present (true) on a 2xx attempt, which also completes the delivery — no
     * `delivery.completed` follows it. Format 1 entries (before it) lack it and are followed by
     * one; both replay and verify the same way.
     */
    completes?: true
    /**
     * An endpoint with an adaptive rate limit: the rate in force after this answer (a 429/503
     * halves it, 2xx answers bring it back; null: the configured rate again). Absent: unchanged.
     */
    rate_adapted_per_second?: number | null
  }
  /** Format 1 only: a 2xx attempt's completion (format 2 says it on the attempt: `completes`). */
  'delivery.completed': Record<string, never>
  'delivery.retry_scheduled': { next_attempt_at: string; backoff_ms: number }
  'delivery.snoozed': { next_attempt_at: string; retry_after_ms: number }
  'delivery.discarded': { reason: DiscardReason; detail?: string }
  /**
   * An attempt's outcome that arrived after its claim was lost (the lease ran out and the
   * rescuer took the delivery back): not applied, but kept, so no real answer vanishes.
   */
  'delivery.settle_dropped': {
    worker: string
    claimed_by: string
    lease_until: string
    outcome: string
    started_at: string | null
    duration_ms: number | null
    status_code: number | null
    error: string | null
  }
  'delivery.redelivered': {
    run: number
    next_attempt_at: string
    previous_run: number
    previous_attempts: number
    /** Present when `webhooks.recover` started the run (the delivery was discarded). */
    recovered?: RecoveredPayload
  }
  /**
   * Settled deliveries (completed or discarded) whose last change is older than `cutoff` left
   * the `deliveries` projection (delivery retention): one entry per batch, naming every row it
   * removed; their own entries stay in the ledger, so their history is still readable. The
   * entry names no delivery (`delivery_id` is null) and spans owners (`owner_id` is `*`).
   */
  'deliveries.retired': { delivery_ids: string[]; count: number; cutoff: string }
  /**
   * A deleted endpoint with no delivery left to settle (none pending, retryable or running)
   * left the `endpoints` projection; `deleted_at` is when it was deleted.
   */
  'endpoint.purged': { deleted_at: string }
  // Security-relevant changes outside the two projections: who may call the API, and what an
  // embed may see. No secret is ever in a payload (a token's hash is not either).
  'token.issued': { token_id: string; scopes: string[]; label: string }
  'token.revoked': { token_id: string }
  'access_code.put': {
    access_code_id: string
    role_globs: string[]
    deny_globs: string[]
    reads_published_slice: boolean
    expires_at: string | null
    created: boolean
  }
  'access_code.revoked': { access_code_id: string }
  'embed.put': { embed_id: string; access_code_id: string; created: boolean }
  'embed.deleted': { embed_id: string }
  // The installation's event catalog (event-type-declaration.ts): declared types, installation-wide
  // (owner `*`), applied to `event_types` by hookledger_write like the security tables.
  'event_type.declared': { name: string; description: string; exposure: 'webhook' | 'internal'; group: string; schema: Record<string, unknown> | null }
  /** Only the fields it changes; `schema: null` removes the type's schema. */
  'event_type.updated': { name: string; description?: string; exposure?: 'webhook' | 'internal'; group?: string; schema?: Record<string, unknown> | null }
  'event_type.deprecated': { name: string; reason: string; sunset_at: string | null }
  // An owner's limits and suspension (owner-limits.ts), applied to `owners` by hookledger_write
  // like the security tables (migration 0009). The entry's owner_id is the owner.
  /** Only the limits it changes; null clears one (weight cleared is 1). */
  'owner.limits_set': { limits: OwnerLimitsPatch }
  'owner.suspended': { reason: string }
  'owner.resumed': Record<string, never>
  /**
   * Rows below `before_position` left the ledger through the audited retention function:
   * `partitions` whole partitions.
   */
  'ledger.retention': {
    /** Where the dropped partitions end (null: none could go). */
    before_position: number | null
    rows: number
    partitions?: number
    /** The last checkpoint the archive holds. */
    through_checkpoint?: number
    /** The archive file: its SHA-256, rows, and the checkpoints it holds. */
    archive?: ArchiveDescription | null
  }
}

/** What `webhooks.recover` records on the entry it appends: the window asked for and why the event was missed. */
export interface RecoveredPayload {
  since: string
  until: string
  missed: string
}

export type LedgerKind = keyof LedgerPayloads

/** Named outcomes of one attempt, as recorded in the attempt history. */
export type AttemptOutcomeName =
  | 'completed'
  | 'retry_scheduled'
  | 'snoozed'
  | 'discarded'
  | 'interrupted'

/** Why a delivery was discarded. */
export type DiscardReason =
  | 'http_status'
  | 'max_attempts'
  | 'egress_blocked'
  | 'endpoint_disabled'
  | 'endpoint_deleted'
  | 'event_pruned'
  | 'retry_window_exceeded'
  | 'redirect_cross_origin'
  | 'redirect_not_followed'

interface LedgerEntryBase {
  readonly occurred_at: Date
  readonly owner_id: string
  readonly endpoint_id: string | null
  readonly delivery_id: string | null
  readonly event_id: string | null
  readonly actor: Actor
}

/** One entry to append. `position` and `tx_id` are assigned by the database. */
export type LedgerEntry = {
  [K in LedgerKind]: LedgerEntryBase & { readonly kind: K; readonly payload: LedgerPayloads[K] }
}[LedgerKind]

/** An entry read back from the ledger. */
export type LedgerRecord = LedgerEntry & { readonly position: string }

/** An entry of one kind. */
export type LedgerEntryOf<K extends LedgerKind> = Extract<LedgerEntry, { kind: K }>

/** ISO string of a Date, the one way timestamps enter payloads. */
export const iso = (d: Date): string => d.toISOString()

/** What a `ledger.retention` entry records about the archive file written before the drop. */
export interface ArchiveDescription {
  readonly file: string
  readonly sha256: string
  readonly rows: number
  readonly first_checkpoint: number
  readonly last_checkpoint: number
}
