import {
  base64ToBytes,
  canonicalJson,
  oauth2TokenRequest,
  oauth2TokenUsable,
  readOauth2TokenAnswer,
  type EndpointRow,
  type HttpTransport,
  type Oauth2Token,
  type SecretBox,
} from '@hookledger/core'

export type Oauth2TokenFetch = { ok: true; access_token: string } | { ok: false; error: string }

/**
 * The bearer tokens of OAuth2 endpoints, fetched through the guarded transport (so the egress
 * guard and the operator's proxy apply to the token URL as to the endpoint) and kept in memory
 * only, per endpoint, until their expiry less a margin on the injected clock. A changed `oauth2`
 * (new URL, client, secret) is a different key, so it never reuses the old token. Concurrent
 * attempts to one endpoint share one fetch. Tokens are never logged nor returned in an error.
 */
export class Oauth2Tokens {
  readonly #tokens = new Map<string, { key: string; token: Oauth2Token }>()
  readonly #fetching = new Map<string, Promise<Oauth2TokenFetch>>()

  constructor(
    private readonly transport: HttpTransport,
    private readonly secretBox: SecretBox,
  ) {}

  /** A usable token for `endpoint` at `now`; `fresh` skips the cache (after a 401). */
  async token(endpoint: Pick<EndpointRow, 'id' | 'oauth2'>, now: Date, fresh = false): Promise<Oauth2TokenFetch> {
    const config = endpoint.oauth2
    if (config === null) throw new Error('oauth2 token asked for an endpoint without oauth2')
    const key = canonicalJson(config)
    const held = this.#tokens.get(endpoint.id)
    if (!fresh && held && held.key === key && oauth2TokenUsable(held.token, now)) return { ok: true, access_token: held.token.access_token }
    const flight = `${endpoint.id} ${key}`
    const pending = this.#fetching.get(flight)
    if (pending && !fresh) return pending
    const fetching = this.#fetch(endpoint.id, key, config, now).finally(() => this.#fetching.delete(flight))
    this.#fetching.set(flight, fetching)
    return fetching
  }

  /** Drops an endpoint's token (its 401 said the receiver no longer takes it). */
  forget(endpointId: string): void {
    this.#tokens.delete(endpointId)
  }

  async #fetch(endpointId: string, key: string, config: NonNullable<EndpointRow['oauth2']>, now: Date): Promise<Oauth2TokenFetch> {
    const request = oauth2TokenRequest(config, this.secretBox.open(base64ToBytes(config.client_secret_sealed)))
    const failed = (why: string): Oauth2TokenFetch => ({ ok: false, error: `oauth2_token_failed: ${why} from ${config.token_url}`.slice(0, 400) })
    // A redirect would re-send the client's basic credentials: none is followed.
    const result = await this.transport.post({ url: config.token_url, headers: request.headers, body: request.body, followRedirects: 'none' })
    switch (result.kind) {
      case 'response': {
        const answer = readOauth2TokenAnswer(result.status, result.bodyExcerpt, result.bodyTruncated ?? false, now)
        if (!answer.ok) return failed(answer.reason)
        this.#tokens.set(endpointId, { key, token: answer.token })
        return { ok: true, access_token: answer.token.access_token }
      }
      case 'egress_blocked':
        return failed(`egress_blocked ${result.address} (${result.error})`)
      default:
        return failed(`${result.kind} ${result.error}`)
    }
  }
}

const perTransport = new WeakMap<HttpTransport, Oauth2Tokens>()

/**
 * The token cache of one transport: every attempt made through it (the dispatcher's loop and
 * `runOnce` alike) shares it, and it goes with the transport.
 */
export function oauth2TokensOf(transport: HttpTransport, secretBox: SecretBox): Oauth2Tokens {
  let tokens = perTransport.get(transport)
  if (!tokens) perTransport.set(transport, (tokens = new Oauth2Tokens(transport, secretBox)))
  return tokens
}
