import type { EndpointOauth2 } from './endpoint-call-options.js'

/**
 * OAuth2 client credentials (RFC 6749 §4.4) as pure rules: the token request, reading the token
 * server's answer, and how long a token is used. The worker does the I/O through the guarded
 * transport. No function here puts the client secret or a token into a message.
 */

/** A token is not used in its last 30 s (or the last half of a shorter life): clocks and queues drift. */
export const OAUTH2_TOKEN_MARGIN_MS = 30_000
/** A token answer without `expires_in` is used for 5 minutes. */
export const OAUTH2_DEFAULT_LIFETIME_MS = 5 * 60_000
/** And none for more than a day, whatever it says: a revoked client is noticed within one. */
export const OAUTH2_MAX_LIFETIME_MS = 24 * 3_600_000

/** The form POST to `token_url`: client_secret_basic, the spec's default client authentication. */
export function oauth2TokenRequest(
  config: Pick<EndpointOauth2, 'client_id' | 'scope' | 'audience'>,
  clientSecret: string,
): { headers: Record<string, string>; body: string } {
  const form = new URLSearchParams({ grant_type: 'client_credentials' })
  if (config.scope !== null) form.set('scope', config.scope)
  if (config.audience !== null) form.set('audience', config.audience)
  // §2.3.1: id and secret are form-urlencoded before the basic scheme's base64.
  const basic = Buffer.from(`${formEncode(config.client_id)}:${formEncode(clientSecret)}`).toString('base64')
  return {
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
      authorization: `Basic ${basic}`,
    },
    body: form.toString(),
  }
}

const formEncode = (s: string) => new URLSearchParams({ s }).toString().slice(2)

export interface Oauth2Token {
  readonly access_token: string
  /** When the worker stops using it (its expiry less the margin). */
  readonly use_until: Date
}

export type Oauth2TokenAnswer = { ok: true; token: Oauth2Token } | { ok: false; reason: string }

/** OAuth2 error codes are a short ASCII word: shown; anything else in a body is not (it may echo). */
const ERROR_CODE = /^[a-z_]{1,40}$/

/**
 * The token server's answer at `now`. A refusal's reason names the status and the OAuth2 `error`
 * code only, never the body (a server may echo what it was sent).
 */
export function readOauth2TokenAnswer(status: number, body: string, truncated: boolean, now: Date): Oauth2TokenAnswer {
  let json: unknown = null
  try {
    json = JSON.parse(body)
  } catch {
    json = null
  }
  const fields = json !== null && typeof json === 'object' ? (json as Record<string, unknown>) : {}
  if (status < 200 || status > 299) {
    const code = typeof fields['error'] === 'string' && ERROR_CODE.test(fields['error']) ? ` (${fields['error']})` : ''
    return { ok: false, reason: `HTTP ${status}${code}` }
  }
  if (truncated) return { ok: false, reason: `HTTP ${status}, answer longer than 4 KiB` }
  const token = fields['access_token']
  if (typeof token !== 'string' || token === '' || /[\r\n]/.test(token)) {
    return { ok: false, reason: `HTTP ${status} without an access_token` }
  }
  const type = fields['token_type']
  if (typeof type === 'string' && type.toLowerCase() !== 'bearer') return { ok: false, reason: `HTTP ${status}, token_type is not bearer` }
  const expiresIn = fields['expires_in']
  const lifetimeMs =
    typeof expiresIn === 'number' && Number.isFinite(expiresIn) && expiresIn > 0
      ? Math.min(expiresIn * 1000, OAUTH2_MAX_LIFETIME_MS)
      : OAUTH2_DEFAULT_LIFETIME_MS
  const margin = Math.min(OAUTH2_TOKEN_MARGIN_MS, lifetimeMs / 2)
  return { ok: true, token: { access_token: token, use_until: new Date(now.getTime() + lifetimeMs - margin) } }
}

/** A cached token is used while `now` is before its `use_until`. */
export const oauth2TokenUsable = (token: Oauth2Token, now: Date): boolean => now.getTime() < token.use_until.getTime()
