/**
 * What one attempt sent and what it got back, rebuilt for the attempt history from what is
 * stored: the request from the event (the body is the thin event, so it is not stored per
 * attempt), the endpoint's URL at the time and the attempt's start (the signature's timestamp
 * is its second); the response from the `delivery.attempted` entry (status, ≤ 4 KiB of body,
 * the capped headers). Pure: the caller reads the rows and opens the secrets.
 */
import { signWebhook } from '../signing/webhook-signature.js'

/** The event as the body carries it. */
export interface ThinEvent {
  readonly id: string
  readonly type: string
  readonly subject: string
  readonly occurred_at: Date
  readonly data: unknown
}

/** The thin body: type, subject, id — and `data`, which carries identifiers and flags only. */
export function thinEventBody(event: ThinEvent): string {
  return JSON.stringify({
    id: event.id,
    type: event.type,
    subject: event.subject,
    occurred_at: event.occurred_at.toISOString(),
    data: event.data,
  })
}

/** The user agent every attempt sends (the transport's default). */
export const DELIVERY_USER_AGENT = 'hookledger/0.1'

export interface AttemptRequest {
  readonly url: string
  readonly headers: Record<string, string>
  /** Null when the event has been pruned (past the event retention): nothing to rebuild it from. */
  readonly body: string | null
}

export interface AttemptResponse {
  readonly status_code: number
  readonly headers: Record<string, string>
  readonly body: string
  /** The receiver said more than the first 4 KiB kept here. */
  readonly truncated: boolean
}

export interface AttemptExchangeInput {
  readonly event_id: string
  /** Null when pruned. */
  readonly event: ThinEvent | null
  readonly url: string
  readonly started_at: Date
  readonly signed_with: readonly string[]
  /** Secrets still held, by key id (the endpoint's current and previous). */
  readonly secrets: ReadonlyMap<string, string>
  readonly status_code: number | null
  readonly response_excerpt?: string | undefined
  readonly response_headers?: Readonly<Record<string, string>> | undefined
  readonly response_truncated?: boolean | undefined
}

/**
 * The request and response of one attempt. The signature is recomputed when every key it was
 * signed with is still held and the body can be rebuilt; otherwise the header says which keys
 * signed it. Secrets never appear; a signature is what the receiver saw anyway.
 */
export function attemptExchange(input: AttemptExchangeInput): {
  request: AttemptRequest
  response: AttemptResponse | null
} {
  const body = input.event ? thinEventBody(input.event) : null
  const timestamp = Math.floor(input.started_at.getTime() / 1000)
  const secrets = input.signed_with.map((id) => input.secrets.get(id))
  const held = secrets.every((s): s is string => s !== undefined) && secrets.length > 0
  const signature =
    body !== null && held
      ? signWebhook({ id: input.event_id, timestamp, body, secrets: secrets as string[] }).headers['webhook-signature']
      : `(not shown: signed with key ${input.signed_with.join(', ')}, no longer held${body === null ? ', or the event was pruned' : ''})`
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': DELIVERY_USER_AGENT,
    ...(body !== null ? { 'content-length': String(Buffer.byteLength(body)) } : {}),
    'webhook-id': input.event_id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signature,
  }
  const response =
    input.status_code === null
      ? null
      : {
          status_code: input.status_code,
          headers: { ...(input.response_headers ?? {}) },
          body: input.response_excerpt ?? '',
          truncated: input.response_truncated === true,
        }
  return { request: { url: input.url, headers, body }, response }
}
