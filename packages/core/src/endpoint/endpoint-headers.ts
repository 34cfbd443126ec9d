/**
 * An endpoint's custom request headers: which an owner may set, and how they are shown. Plain
 * headers are stored as given; a secret one is sealed with the master key like the endpoint's
 * secret and never shown again (answers carry `SECRET_HEADER_MASK` in its place).
 *
 * The rule, checked on create and update (each refusal names `headers.<name>` as given):
 * - at most `MAX_ENDPOINT_HEADERS` headers, `MAX_ENDPOINT_HEADERS_BYTES` of names and values in all;
 * - a name is an HTTP token (RFC 9110 §5.6.2), case-insensitive, stored lower-cased, given once;
 * - the signature's headers (`webhook-*`), the framing and identity the transport sets
 *   (`content-type`, `content-length`, `host`, `user-agent`), the hop-by-hop ones and
 *   `authorization` are refused: a custom header could only break or impersonate them;
 * - a value is visible ASCII, spaces and tabs (no CR, LF or NUL: no header can be smuggled),
 *   not empty and without surrounding whitespace (HTTP would strip it, so the receiver would
 *   see another value than the one stored).
 */
import type { EndpointRow } from '../model/projections.js'
import type { SecretBox } from '../signing/secret-box.js'

/** At most this many custom headers per endpoint. */
export const MAX_ENDPOINT_HEADERS = 20
/** Names and values of all custom headers together, in bytes (they are ASCII). */
export const MAX_ENDPOINT_HEADERS_BYTES = 4096
/** What every answer shows instead of a secret header's value: nothing of the value. */
export const SECRET_HEADER_MASK = '••••••••'

/** Headers the transport or the signature owns, and hop-by-hop headers. */
const REFUSED_NAMES: ReadonlySet<string> = new Set([
  'content-type',
  'content-length',
  'host',
  'user-agent',
  'authorization',
  'connection',
  'keep-alive',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
])
const REFUSED_PREFIXES = ['webhook-', 'proxy-'] as const

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/
const FIELD_VALUE = /^[\t\x20-\x7e]*$/

/**
 * One header as an owner gives it: a plain value, `{ value, secret? }`, or, on update only,
 * `{ secret: true }` without a value to keep the secret value the endpoint already holds.
 */
export type EndpointHeaderInput = string | { readonly value?: string | undefined; readonly secret?: boolean | undefined }

/** A refusal: the field at fault (`headers` or `headers.<name>` as given) and why. */
export interface EndpointHeaderProblem {
  readonly code: 'header_reserved' | 'invalid_header'
  readonly field: string
  readonly message: string
}

/** The headers as checked: names lower-cased; secret values still clear (the caller seals them). */
export interface CheckedEndpointHeaders {
  readonly plain: Readonly<Record<string, string>>
  /** New secret values, clear, to seal. */
  readonly secret: Readonly<Record<string, string>>
  /** Secret headers whose sealed value the endpoint keeps. */
  readonly kept: readonly string[]
}

/** Why a name cannot be a custom header, or null. `name` is lower-cased. */
export function refusedHeaderReason(name: string): string | null {
  if (REFUSED_NAMES.has(name)) {
    return name === 'authorization'
      ? 'is refused: a custom authorization header is not sent (give it another name, e.g. x-api-key, and mark it secret)'
      : 'is refused: hookledger sets this header itself, or it is hop-by-hop'
  }
  const prefix = REFUSED_PREFIXES.find((p) => name.startsWith(p))
  if (prefix === 'webhook-') return 'is refused: webhook-* headers carry the Standard Webhooks signature'
  if (prefix === 'proxy-') return 'is refused: proxy-* headers are hop-by-hop'
  return null
}

/** Why a value cannot be sent, or null. Never quotes the value (it may be a secret). */
function valueProblem(value: string): string | null {
  if (value === SECRET_HEADER_MASK) {
    return 'is the mask of a secret header: send { "secret": true } to keep its value, or a new value'
  }
  if (value.length === 0) return 'is empty: give a value, or leave the header out'
  if (!FIELD_VALUE.test(value)) {
    return 'must be visible ASCII, spaces and tabs only (no CR, LF, NUL or other control characters)'
  }
  if (/^[\t ]|[\t ]$/.test(value)) return 'must not begin or end with whitespace'
  return null
}

/**
 * Checks an endpoint's headers as given. `keepable` holds, for an update, the byte length of
 * each secret value the endpoint holds (by lower-cased name), so `{ secret: true }` can keep
 * one and the limit still counts it; on create it is empty.
 */
export function checkEndpointHeaders(
  input: Readonly<Record<string, EndpointHeaderInput>>,
  keepable: ReadonlyMap<string, number> = new Map(),
): { ok: true; headers: CheckedEndpointHeaders } | { ok: false; problem: EndpointHeaderProblem } {
  const refuse = (code: EndpointHeaderProblem['code'], field: string, message: string) =>
    ({ ok: false, problem: { code, field, message } }) as const
  const given = Object.entries(input)
  if (given.length > MAX_ENDPOINT_HEADERS) {
    return refuse('invalid_header', 'headers', `at most ${MAX_ENDPOINT_HEADERS} headers (${given.length} given)`)
  }
  const plain: Record<string, string> = {}
  const secret: Record<string, string> = {}
  const kept: string[] = []
  const seen = new Set<string>()
  let bytes = 0
  for (const [rawName, entry] of given) {
    const field = `headers.${rawName}`
    if (!TOKEN.test(rawName)) {
      return refuse('invalid_header', field, 'is not a valid header name (letters, digits and !#$%&\'*+-.^_`|~ only)')
    }
    const name = rawName.toLowerCase()
    if (seen.has(name)) return refuse('invalid_header', field, 'is given twice (header names are case-insensitive)')
    seen.add(name)
    const refused = refusedHeaderReason(name)
    if (refused) return refuse('header_reserved', field, refused)
    const isSecret = typeof entry === 'object' && entry.secret === true
    const value = typeof entry === 'string' ? entry : entry.value
    if (value === undefined) {
      const length = keepable.get(name)
      if (!isSecret || length === undefined) {
        return refuse('invalid_header', field, isSecret
          ? 'has no value, and the endpoint holds no secret header of this name to keep'
          : 'has no value')
      }
      kept.push(name)
      bytes += name.length + length
    } else {
      const problem = valueProblem(value)
      if (problem) return refuse('invalid_header', field, problem)
      if (isSecret) secret[name] = value
      else plain[name] = value
      bytes += name.length + value.length
    }
  }
  if (bytes > MAX_ENDPOINT_HEADERS_BYTES) {
    return refuse('invalid_header', 'headers', `names and values take ${bytes} bytes; at most ${MAX_ENDPOINT_HEADERS_BYTES} in all`)
  }
  return { ok: true, headers: { plain, secret, kept } }
}

/** The headers as every answer shows them: plain values, and the mask for each secret one. */
export function maskedEndpointHeaders(
  row: { readonly headers: Readonly<Record<string, string>>; readonly secret_headers_sealed: Readonly<Record<string, string>> },
): Record<string, string> {
  const out: Record<string, string> = { ...row.headers }
  for (const name of Object.keys(row.secret_headers_sealed)) out[name] = SECRET_HEADER_MASK
  return out
}

/**
 * The endpoint's custom headers as sent: plain ones as stored, secret ones unsealed here (they
 * live only in the request). Rows from before custom headers existed have none.
 */
export function endpointCustomHeaders(
  endpoint: Partial<Pick<EndpointRow, 'headers' | 'secret_headers_sealed'>>,
  box: SecretBox,
): Record<string, string> {
  const out: Record<string, string> = { ...endpoint.headers }
  for (const [name, sealed] of Object.entries(endpoint.secret_headers_sealed ?? {})) {
    out[name] = box.open(new Uint8Array(Buffer.from(sealed, 'base64')))
  }
  return out
}

/** What stands in a receiver's answer where it echoed a secret header's value back. */
export const ECHOED_SECRET_MASK = '[secret header value]'

/**
 * The answer as the ledger may keep it: every occurrence of a secret header's value (a
 * receiver that echoes its request back) replaced by ECHOED_SECRET_MASK, in the body excerpt
 * and in each kept response header. Values shorter than 4 characters are not searched for
 * (they would mask ordinary text; the header rule accepts them, they protect little anyway).
 */
export function withoutEchoedSecrets<T extends { response_excerpt?: string; response_headers?: Readonly<Record<string, string>> }>(
  facts: T,
  secretValues: readonly string[],
): T {
  const secrets = secretValues.filter((v) => v.length >= 4).sort((a, b) => b.length - a.length)
  if (secrets.length === 0) return facts
  const scrub = (text: string) => secrets.reduce((t, v) => t.split(v).join(ECHOED_SECRET_MASK), text)
  return {
    ...facts,
    ...(facts.response_excerpt !== undefined ? { response_excerpt: scrub(facts.response_excerpt) } : {}),
    ...(facts.response_headers !== undefined
      ? { response_headers: Object.fromEntries(Object.entries(facts.response_headers).map(([k, v]) => [k, scrub(v)])) }
      : {}),
  }
}
