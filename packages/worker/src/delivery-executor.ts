import {
  JOB_TIMEOUT_MS,
  classifyAttempt,
  DEFAULT_FOLLOW_REDIRECTS,
  endpointCustomHeaders,
  withoutEchoedSecrets,
  signEndpointAttempt,
  thinEventBody,
  base64ToBytes,
  type AttemptResult,
  type EndpointMtls,
  type OutgoingTls,
  type Clock,
  type HttpTransport,
  type SecretBox,
  type SnoozeBudget,
} from '@hookledger/core'
import type { ClaimedDelivery, Settlement } from '@hookledger/store'
import { oauth2TokensOf } from './oauth2-tokens.js'

/** The client certificate's TLS options, its key opened from the seal only for this request. */
const endpointTls = (mtls: EndpointMtls, box: SecretBox): OutgoingTls => ({
  cert: mtls.certificate,
  key: box.open(base64ToBytes(mtls.private_key_sealed)),
  ...(mtls.ca !== null ? { ca: mtls.ca } : {}),
})

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
      // A token failure reads as itself: it names the token URL's outcome, not a connect.
      return result.error.startsWith('oauth2_token_failed') ? result.error : `${result.kind}: ${result.error}`
  }
}

/**
 * One attempt: sign as the endpoint's scheme says (v1 HMAC and/or v1a ed25519, each with the
 * previous key too during its grace window), POST through the guarded transport — with the
 * endpoint's client certificate (mTLS) and its OAuth2 bearer token, fetched anew once on a 401 —
 * and classify the result. No database transaction is open here. The job timeout bounds the whole attempt
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
  let backstop: NodeJS.Timeout | undefined
  const custom = endpointCustomHeaders(endpoint, deps.secretBox)
  const tokens = endpoint.oauth2 ? oauth2TokensOf(deps.transport, deps.secretBox) : null
  const bearers: string[] = []
  const post = async (fresh: boolean): Promise<AttemptResult> => {
    const token = tokens ? await tokens.token(endpoint, now, fresh) : null
    // The token URL's failure is this attempt's, retried like a connection error.
    if (token && !token.ok) return { kind: 'connection_error', durationMs: 0, error: token.error }
    if (token) bearers.push(token.access_token)
    return deps.transport.post({
      url: endpoint.url,
      // The endpoint's own headers, then the signature's (the header rule refuses their names anyway).
      headers: { ...custom, ...(token ? { authorization: `Bearer ${token.access_token}` } : {}), ...signed.headers },
      followRedirects: endpoint.follow_redirects ?? DEFAULT_FOLLOW_REDIRECTS,
      body,
      signal: job.signal,
      ...(endpoint.mtls ? { tls: endpointTls(endpoint.mtls, deps.secretBox) } : {}),
    })
  }
  const result = await Promise.race([
    // A 401 with a bearer token: the token is fetched anew, once, and the request sent again.
    post(false).then((first) => (tokens && first.kind === 'response' && first.status === 401 && !job.signal.aborted
      ? (tokens.forget(endpoint.id), post(true))
      : first)),
    new Promise<AttemptResult>((resolve) => {
      timer = setTimeout(() => {
        job.abort()
        // Let the transport answer for itself first; resolve only if it does not. Not unref'd:
        // a shutdown may be waiting on this attempt with nothing else keeping the process up.
        backstop = setTimeout(() => resolve({ kind: 'timeout', durationMs: timeoutMs, error: 'job timeout' }), 1_000)
      }, timeoutMs)
    }),
  ]).finally(() => (clearTimeout(timer), clearTimeout(backstop)))
  // A receiver that echoes its request back must not put a secret header's value in the ledger.
  const secretValues = [...Object.keys(endpoint.secret_headers_sealed ?? {}).flatMap((name) => custom[name] ?? []), ...bearers]
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
