import { z } from 'zod'
import { endpointHeadersOutput, followRedirectsSchema, orderingSchema, rateLimitOutput } from './endpoint-options.js'
import { endpointMtlsOutput, endpointMtlsView, endpointOauth2Output, endpointOauth2View } from './endpoint-auth-options.js'
import {
  SIGNATURE_SCHEMES,
  endpointState,
  eventIdSchema,
  isoTimestampSchema,
  maskedEndpointHeaders,
  type AttemptRow,
  type DeliveryRow,
  type EndpointRow,
  type WaitingReason,
} from '@hookledger/core'

/** Ids we mint are UUIDs; anything else cannot name one of our rows. */
export const uuidParam = z.string().uuid({ message: 'must be a UUID' })

/** Event ids and timestamps: the rules published events share with `@hookledger/publisher`. */
export const eventId = eventIdSchema
export const isoTimestamp = isoTimestampSchema

export const limitParam = z.coerce.number().int().min(1).max(200).default(50)
export const cursorParam = z.string().min(1).max(512).optional()

export const signatureSchemeSchema = z
  .enum(SIGNATURE_SCHEMES)
  .describe('Which signatures requests carry: v1 (HMAC-SHA256, whsec_), v1a (ed25519, whpk_), or both')

/** A `whpk_` key: what a receiver verifies v1a signatures with. */
export const publicKeySchema = z
  .string()
  .nullable()
  .describe('whpk_ + base64 of the ed25519 public key that verifies v1a signatures; null until the scheme includes v1a')

export const endpointSchema = z.object({
  id: z.string(),
  url: z.string(),
  description: z.string(),
  event_types: z.array(z.string()),
  embed_id: z.string().nullable(),
  enabled: z.boolean(),
  state: z.enum(['enabled', 'failing', 'disabled']),
  disabled_reason: z.string().nullable(),
  failing_since: z.string().nullable(),
  signature_scheme: signatureSchemeSchema,
  public_key: publicKeySchema,
  /** Custom headers; a secret one's value is always the mask, never the value. */
  headers: endpointHeadersOutput.describe('Custom request headers, name → value; a secret one shows "••••••••"'),
  secret_headers: z.array(z.string()).describe('The names of the secret headers (their values are never shown)'),
  follow_redirects: followRedirectsSchema,
  rate_limit: rateLimitOutput,
  rate_adapted_per_second: z.number().nullable().describe('An adaptive rate limit: the rate in force after 429/503 answers lowered it; null: the configured rate'),
  ordering: orderingSchema,
  mtls: endpointMtlsOutput,
  oauth2: endpointOauth2Output,
  created_at: z.string(),
  updated_at: z.string(),
})
export type EndpointView = z.input<typeof endpointSchema>

const isoOrNull = (d: Date | null) => (d ? d.toISOString() : null)

/** The public shape of an endpoint: never its secret or private key, never its lease. */
export function endpointView(row: EndpointRow): EndpointView {
  const state = endpointState(row)
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    event_types: row.event_types,
    embed_id: row.embed_id,
    enabled: row.enabled,
    state: state === 'deleted' ? 'disabled' : state,
    disabled_reason: row.disabled_reason,
    failing_since: isoOrNull(row.failing_since),
    signature_scheme: row.signature_scheme,
    public_key: row.v1a_public_key,
    headers: maskedEndpointHeaders(row),
    secret_headers: Object.keys(row.secret_headers_sealed),
    follow_redirects: row.follow_redirects,
    rate_limit: row.rate_limit,
    rate_adapted_per_second: row.rate_limit?.adaptive ? row.rate_adapted_per_second : null,
    ordering: row.ordering,
    mtls: endpointMtlsView(row.mtls),
    oauth2: endpointOauth2View(row.oauth2),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  }
}

export const deliveryStateSchema = z.enum([
  'pending',
  'running',
  'retryable',
  'completed',
  'discarded',
])

export const deliverySchema = z.object({
  id: z.string(),
  endpoint_id: z.string(),
  event_id: z.string(),
  event_type: z.string(),
  state: deliveryStateSchema,
  run: z.number().int(),
  attempts: z.number().int(),
  /** Retry-After snoozes in this run (no attempt spent) and their total delay: the snooze budget used. */
  snoozes: z.number().int(),
  snoozed_ms: z.number().int(),
  last_status: z.number().int().nullable(),
  last_error: z.string().nullable(),
  next_attempt_at: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  link: z.string(),
  /** Why a pending or retryable delivery waits, and until when; null otherwise. */
  waiting_reason: z
    .object({
      kind: z.enum(['backoff', 'retry_after', 'cool_down', 'lease_busy', 'rate_limited', 'ordering', 'due', 'scheduled']),
      until: z.string().nullable(),
      /** `backoff`: after attempt n of 18. */
      attempt: z.number().int().optional(),
      of: z.number().int().optional(),
      /** `retry_after`: what the receiver asked for (capped). */
      retry_after_ms: z.number().int().optional(),
      /** `ordering` (a strict-ordered endpoint): the earlier delivery that must complete or be discarded first. */
      blocked_by: z.string().optional(),
      /** One line for people: "backoff after attempt 3 of 18, until …". */
      text: z.string(),
    })
    .nullable(),
})
export type DeliveryView = z.input<typeof deliverySchema>

const WAITING_TEXT: Record<WaitingReason['kind'], (r: WaitingReason) => string> = {
  backoff: (r) => `backoff after attempt ${'attempt' in r ? r.attempt : '?'} of ${'of' in r ? r.of : 18}`,
  retry_after: (r) => `the receiver asked to retry later (Retry-After ${'retry_after_ms' in r ? Math.round(r.retry_after_ms / 1000) : '?'} s)`,
  cool_down: () => 'the endpoint is failing: new deliveries wait out a 5 min cool-down',
  lease_busy: () => 'another delivery to this endpoint is in flight (one at a time)',
  rate_limited: () => "rate_limited: the endpoint's rate limit lets the next request through later",
  ordering: (r) => `strict ordering: waits for delivery ${'blocked_by' in r ? r.blocked_by : '?'} (earlier on this endpoint) to complete or be discarded`,
  due: () => 'due: waiting for a free worker',
  scheduled: () => 'scheduled',
}

export function waitingReasonView(r: WaitingReason | null): DeliveryView['waiting_reason'] {
  if (r === null) return null
  const until = r.until ? r.until.toISOString() : null
  return {
    ...r,
    until,
    text: `${WAITING_TEXT[r.kind](r)}${until ? `, until ${until}` : ''}`,
  }
}

export function deliveryView(row: DeliveryRow, baseUrl: string, waiting: WaitingReason | null = null): DeliveryView {
  return {
    id: row.id,
    endpoint_id: row.endpoint_id,
    event_id: row.event_id,
    event_type: row.event_type,
    state: row.state,
    run: row.run,
    attempts: row.attempts,
    snoozes: row.snoozes,
    snoozed_ms: Number(row.snoozed_ms),
    last_status: row.last_status,
    last_error: row.last_error,
    next_attempt_at: isoOrNull(row.next_attempt_at),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    link: `${baseUrl}/ui/deliveries/${row.id}`,
    waiting_reason: waitingReasonView(waiting),
  }
}

export const attemptSchema = z.object({
  attempt: z.number().int(),
  run: z.number().int(),
  counted: z.boolean(),
  started_at: z.string(),
  duration_ms: z.number().int(),
  status_code: z.number().int().nullable(),
  error: z.string().nullable(),
  outcome: z.string(),
  signed_with: z.array(z.string()),
  actor: z.string(),
  /** What was sent: rebuilt from the event, the endpoint's URL at the time and the start. */
  request: z.object({
    url: z.string(),
    headers: z.record(z.string(), z.string()),
    /** Null once the event has been pruned. */
    body: z.string().nullable(),
  }),
  /** What came back; null when there was no answer (`error` says why). */
  response: z
    .object({
      status_code: z.number().int(),
      headers: z.record(z.string(), z.string()),
      /** The first ≤ 4 KiB of the body. */
      body: z.string(),
      truncated: z.boolean(),
    })
    .nullable(),
})

export function attemptView(
  row: AttemptRow,
  exchange: Pick<z.input<typeof attemptSchema>, 'request' | 'response'>,
): z.input<typeof attemptSchema> {
  return {
    attempt: row.attempt,
    run: row.run,
    counted: row.counted,
    started_at: row.started_at.toISOString(),
    duration_ms: row.duration_ms,
    status_code: row.status_code,
    error: row.error,
    outcome: row.outcome,
    signed_with: row.signed_with,
    actor: row.actor,
    request: exchange.request,
    response: exchange.response,
  }
}

/** `{ data, next_cursor }`, the shape of every list. */
export const pageOf = <T extends z.ZodType>(item: T) =>
  z.object({ data: z.array(item), next_cursor: z.string().nullable() })
