import { z } from 'zod'
import {
  FOLLOW_REDIRECTS_RULES,
  MAX_ENDPOINT_HEADERS_BYTES,
  base64ToBytes,
  bytesToBase64,
  checkEndpointHeaders,
  sealedPlaintextBytes,
  type EndpointHeaderInput,
  type EndpointHeaderSet,
  type EndpointRow,
  type SecretBox,
} from '@hookledger/core'
import { OpError } from './op-error.js'
import { authInputForLog } from './endpoint-auth-options.js'

/**
 * The endpoint options `webhooks.create` and `webhooks.update` accept: custom headers and the
 * redirect rule. The shape is checked here; the header rule (names, values, limits) is core's
 * `checkEndpointHeaders`, whose refusals are 422s naming `headers.<name>`.
 */

export const followRedirectsSchema = z
  .enum(FOLLOW_REDIRECTS_RULES)
  .describe('Which redirects requests follow: same_origin (default; each hop egress-guarded) or none (a 3xx is discarded redirect_not_followed)')

export const endpointHeadersInput = z
  .record(
    z.string().min(1).max(256),
    z.union([
      z.string().max(MAX_ENDPOINT_HEADERS_BYTES),
      z.strictObject({
        value: z.string().max(MAX_ENDPOINT_HEADERS_BYTES).optional(),
        secret: z.boolean().optional(),
      }),
    ]),
  )
  .describe(
    'Custom request headers, name → value. A secret one is { "value": "…", "secret": true }: sealed at rest, never shown again (answers show "••••••••"); on update { "secret": true } without a value keeps the one held. The whole set is replaced. At most 20, 4 KiB in all; webhook-*, content-type, content-length, host, user-agent, authorization and hop-by-hop headers are refused',
  )

/** Answers show the headers with each secret value masked, and which ones are secret. */
export const endpointHeadersOutput = z.record(z.string(), z.string())

/**
 * Checks `input` and seals its new secret values. On update `current` is the endpoint as
 * locked: `{ secret: true }` keeps its sealed value of that name.
 */
export function sealEndpointHeaders(
  box: SecretBox,
  input: Readonly<Record<string, EndpointHeaderInput>>,
  current: Pick<EndpointRow, 'secret_headers_sealed'> | null,
): EndpointHeaderSet {
  const held = current?.secret_headers_sealed ?? {}
  const keepable = new Map(Object.entries(held).map(([name, sealed]) => [name, sealedPlaintextBytes(base64ToBytes(sealed))]))
  const checked = checkEndpointHeaders(input, keepable)
  if (!checked.ok) throw new OpError(checked.problem.code, `${checked.problem.field}: ${checked.problem.message}`, checked.problem.field)
  const sealed: Record<string, string> = {}
  for (const name of checked.headers.kept) sealed[name] = held[name]!
  for (const [name, value] of Object.entries(checked.headers.secret)) sealed[name] = bytesToBase64(box.seal(value))
  return { headers: { ...checked.headers.plain }, secret_headers_sealed: sealed }
}

const REDACTED = '[redacted]'

/**
 * An operation's input as it may be logged: every secret header value replaced, and the mTLS
 * key and OAuth2 client secret (authInputForLog). The API logs
 * each request's validated input at debug; a secret header must not reach that line.
 */
export function inputForLog(input: unknown): unknown {
  return authInputForLog(headersForLog(input))
}

function headersForLog(input: unknown): unknown {
  if (input === null || typeof input !== 'object' || !('headers' in input)) return input
  const headers = (input as { headers?: unknown }).headers
  if (headers === null || typeof headers !== 'object') return input
  const masked = Object.fromEntries(
    Object.entries(headers as Record<string, unknown>).map(([name, entry]) => [
      name,
      entry !== null && typeof entry === 'object' && (entry as { secret?: unknown }).secret === true
        ? { ...(entry as object), ...('value' in entry ? { value: REDACTED } : {}) }
        : entry,
    ]),
  )
  return { ...input, headers: masked }
}

/**
 * How fast and in what order an endpoint is called (`webhooks.create` / `webhooks.update`): a
 * token-bucket rate limit enforced by the claim on the database clock, and the ordering rule.
 * A limit the claim could not honour (a zero rate, a burst below one) is a 422 naming the field.
 */

/** At most one request per hour, at least; at most 10,000 per second (beyond any one endpoint). */
export const MIN_RATE_PER_SECOND = 1 / 3600
export const MAX_RATE_PER_SECOND = 10_000
export const MAX_RATE_BURST = 10_000

export const rateLimitInput = z
  .strictObject({
    per_second: z.number().min(MIN_RATE_PER_SECOND).max(MAX_RATE_PER_SECOND).describe('Sustained requests per second (0.5 = one every 2 s)'),
    burst: z.number().int().min(1).max(MAX_RATE_BURST).default(1).describe('Requests at once after an idle spell (default 1)'),
    adaptive: z.boolean().default(false).describe('Halve the rate on a 429/503 answer and recover it slowly'),
  })
  .nullable()
  .describe('A rate limit the claim enforces across every worker (a token bucket on the database clock); null: none')

export const rateLimitOutput = z
  .object({ per_second: z.number(), burst: z.number().int(), adaptive: z.boolean() })
  .nullable()
  .describe('The rate limit, or null')

export const orderingSchema = z
  .enum(['none', 'strict'])
  .describe('strict: a delivery waits until every earlier one to this endpoint (event occurred_at, then id) is completed or discarded; default none')
