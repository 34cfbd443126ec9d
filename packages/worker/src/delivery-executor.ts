import {
  JOB_TIMEOUT_MS,
  classifyAttempt,
  DEFAULT_FOLLOW_REDIRECTS,
  endpointCustomHeaders,
  withoutEchoedSecrets,
  signEndpointAttempt,
  thinEventBody,
  type AttemptResult,
  type Clock,
  type HttpTransport,
  type SecretBox,
  type SnoozeBudget,
} from '@hookledger/core'
import type { ClaimedDelivery, Settlement } from '@hookledger/store'

export interface ExecutorDeps {
  readonly clock: Clock
  readonly transport: HttpTransport
  readonly secretBox: SecretBox
  readonly actor: string
  readonly jobTimeoutMs?: number
  readonly snoozeBudget?: SnoozeBudget
}

/** The thin body: type, subject, id — and `data`, which carries identifiers and flags only. */
export const thinBody = (event: ClaimedDelivery['event']): string => thinEventBody(event)

/** Short, stable description of a non-response result for the attempt history. */
function errorOf(result: AttemptResult): string | null {
  switch (result.kind) {
    case 'response':
      if (result.redirectRefused) return `redirect_cross_origin: HTTP ${result.status} to ${result.redirectRefused.location} (not followed: another origin)`
      return result.status >= 200 && result.status < 300 ? null : `HTTP ${result.status}`
    case 'egress_blocked':
      return `egress_blocked: ${result.address} (${result.error})`
    default:
      return `${result.kind}: ${result.error}`
  }
}

/**
 * One attempt: sign as the endpoint's scheme says (v1 HMAC and/or v1a ed25519, each with the
 * previous key too during its grace window), POST through the guarded transport, and classify
 * the result. No database transaction is open here. The job timeout bounds the whole attempt
 * even if the transport misbehaves.
 */
export async function executeDelivery(claimed: ClaimedDelivery, deps: ExecutorDeps): Promise<Settlement> {
  const { delivery, endpoint, event } = claimed
  const now = deps.clock.now()
  const body = thinBody(event)
  const signed = signEndpointAttempt(
    endpoint,
    deps.secretBox,
    { id: event.id, timestamp: Math.floor(now.getTime() / 1000), body },
    now,
  )
  // The job timeout aborts the request (so one recorded as timed out cannot still reach the
  // receiver and be answered 2xx); the race is a backstop for a transport that ignores it.
  const timeoutMs = deps.jobTimeoutMs ?? JOB_TIMEOUT_MS
  const job = new AbortController()
  let timer: NodeJS.Timeout | undefined
  const custom = endpointCustomHeaders(endpoint, deps.secretBox)
  const result = await Promise.race([
    deps.transport.post({
      url: endpoint.url,
      // The endpoint's own headers, then the signature's (the header rule refuses their names anyway).
      headers: { ...custom, ...signed.headers },
      followRedirects: endpoint.follow_redirects ?? DEFAULT_FOLLOW_REDIRECTS,
      body,
      signal: job.signal,
    }),
    new Promise<AttemptResult>((resolve) => {
      timer = setTimeout(() => {
        job.abort()
        // Let the transport answer for itself first; resolve only if it does not.
        setTimeout(() => resolve({ kind: 'timeout', durationMs: timeoutMs, error: 'job timeout' }), 1_000).unref()
      }, timeoutMs)
    }),
  ]).finally(() => clearTimeout(timer))
  // A receiver that echoes its request back must not put a secret header's value in the ledger.
  const secretValues = Object.keys(endpoint.secret_headers_sealed ?? {}).flatMap((name) => custom[name] ?? [])
  const facts = withoutEchoedSecrets({
    started_at: now,
    duration_ms: result.durationMs,
    status_code: result.kind === 'response' ? result.status : null,
    error: errorOf(result),
    signed_with: signed.keyIds,
    address: result.kind === 'response' ? result.address : result.kind === 'egress_blocked' ? result.address : null,
    ...(result.kind === 'response' && result.bodyExcerpt ? { response_excerpt: result.bodyExcerpt } : {}),
    ...(result.kind === 'response' && result.headers ? { response_headers: result.headers } : {}),
    ...(result.kind === 'response' && result.bodyTruncated ? { response_truncated: true } : {}),
  }, secretValues)
  return { delivery, endpoint, actor: deps.actor, result, outcome: classifyAttempt(delivery, result, facts, deps.clock.now(), deps.snoozeBudget) }
}
