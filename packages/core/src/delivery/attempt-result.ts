/**
 * What one HTTP attempt produced, as seen by the dispatcher. The transport never throws for a
 * network-level problem: it classifies it into one of these, and the delivery decider turns it
 * into ledger rows.
 */
export type AttemptResult =
  | {
      readonly kind: 'response'
      /** Final status after following redirects. */
      readonly status: number
      /** Raw `retry-after` header of the final response, if any. */
      readonly retryAfter: string | null
      /** First ≤ 4 KiB of the response body, decoded as UTF-8 (lossy). */
      readonly bodyExcerpt: string
      /** The body was longer than the excerpt. */
      readonly bodyTruncated?: boolean
      /** The response headers worth keeping (`keptResponseHeaders`). */
      readonly headers?: Readonly<Record<string, string>>
      readonly durationMs: number
      /** Address (ip) actually connected to for the final hop. */
      readonly address: string | null
      /**
       * A redirect the transport would not follow: to another origin (scheme, host, port) than the
       * endpoint's, where the signed headers must not go (`cross_origin`), or any redirect of an
       * endpoint whose `follow_redirects` is `none` (`not_followed`). `status` is the 3xx that
       * asked for it.
       */
      readonly redirectRefused?: { readonly location: string; readonly reason: 'cross_origin' | 'not_followed' }
    }
  | { readonly kind: 'timeout'; readonly durationMs: number; readonly error: string }
  | { readonly kind: 'connection_error'; readonly durationMs: number; readonly error: string }
  | {
      readonly kind: 'egress_blocked'
      readonly durationMs: number
      /** The address that was refused (after DNS), e.g. "127.0.0.1" or "::ffff:10.0.0.1". */
      readonly address: string
      /** The URL of the hop that was refused (the original or a redirect target). */
      readonly url: string
      readonly error: string
    }
  | { readonly kind: 'too_many_redirects'; readonly durationMs: number; readonly error: string }

/** Which redirects an endpoint's requests follow: same-origin ones (the default) or none. */
export const FOLLOW_REDIRECTS_RULES = ['same_origin', 'none'] as const
export type FollowRedirects = (typeof FOLLOW_REDIRECTS_RULES)[number]
export const DEFAULT_FOLLOW_REDIRECTS: FollowRedirects = 'same_origin'

/** TLS material of one request; an absent `ca`: the transport's default authorities. */
export interface OutgoingTls {
  readonly cert?: string
  readonly key?: string
  readonly ca?: string
}

/** One outgoing signed POST. */
export interface OutgoingRequest {
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  /** Which redirects to follow (the endpoint's `follow_redirects`; default `same_origin`). */
  readonly followRedirects?: FollowRedirects
  readonly body: string
  /** https only: the endpoint's client certificate and key (mTLS, PEM) and the CA its receiver must chain to. */
  readonly tls?: OutgoingTls
  /** Aborts the request (the job timeout): it ends as a `timeout` result, never reaching a late 2xx. */
  readonly signal?: AbortSignal
}

/**
 * Port: sends one POST, never retries, never throws for network-level failures (it returns an
 * AttemptResult instead). Implemented in `@hookledger/worker` with the egress guard.
 */
export interface HttpTransport {
  post(request: OutgoingRequest): Promise<AttemptResult>
  close(): Promise<void>
}
