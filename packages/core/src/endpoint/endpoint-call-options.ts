/**
 * How a receiver asked to be called, as stored on its endpoint (migration 0007): a rate limit,
 * an ordering rule, and authentication by mTLS or OAuth2 client credentials. Secret parts are
 * sealed with the master key (base64), like the signing secret; the rest is what an owner set.
 */

/** A token bucket: `per_second` sustained, `burst` at once; `adaptive` lowers it on 429/503. */
export interface EndpointRateLimit {
  readonly per_second: number
  readonly burst: number
  readonly adaptive: boolean
}

/** `strict`: a delivery waits for every earlier one to its endpoint (event occurred_at, then id). */
export type EndpointOrdering = 'none' | 'strict'
export const DEFAULT_ENDPOINT_ORDERING: EndpointOrdering = 'none'

/** A client certificate presented on connect; `ca` pins the receiver's authority (else the system's). */
export interface EndpointMtls {
  /** PEM, public. */
  readonly certificate: string
  /** PEM, public; null: the system's authorities. */
  readonly ca: string | null
  /** The PEM private key sealed with the master key (base64): opened only to connect. */
  readonly private_key_sealed: string
  /** The certificate's expiry (ISO 8601) and SHA-256 fingerprint, shown instead of the key. */
  readonly not_after: string
  readonly fingerprint: string
}

/** OAuth2 client credentials: a bearer token fetched from `token_url` before calling. */
export interface EndpointOauth2 {
  readonly token_url: string
  readonly client_id: string
  /** Sealed with the master key (base64). */
  readonly client_secret_sealed: string
  readonly scope: string | null
  readonly audience: string | null
}
