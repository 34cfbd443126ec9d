import * as dns from 'node:dns'
import * as http from 'node:http'
import * as https from 'node:https'
import { isIP, type LookupFunction, type Socket } from 'node:net'
import {
  DEFAULT_FOLLOW_REDIRECTS,
  type EgressProxy,
  keptResponseHeaders,
  type AttemptResult,
  type EgressPolicy,
  type HttpTransport,
  type OutgoingRequest,
} from '@hookledger/core'
import { createProxyAgents, ProxyConnectError } from './proxy-connect.js'
import { requestTlsOptions } from './request-tls.js'

/** Options of {@link createHttpTransport}. */
export interface HttpTransportOptions {
  /** Decides every address before a socket connects to it (SPEC §6 egress guard). */
  policy: EgressPolicy
  /** One deadline for connect + every redirect hop + body read. Default 10 000 ms. */
  timeoutMs?: number
  /** Redirect hops followed before giving up with `too_many_redirects`. Default 5. */
  maxRedirects?: number
  /** Response bytes read at most (the rest is dropped, not an error). Default 64 KiB. */
  maxResponseBytes?: number
  /** Sockets per host:port per agent. Default 256. */
  maxSockets?: number
  /** Sent unless the request carries its own user-agent. Default `hookledger/0.1`. */
  userAgent?: string
  /** Resolver, default `dns.lookup`; tests inject one that maps a name to loopback. */
  lookup?: typeof dns.lookup
  /** The operator's egress proxy (`HOOKLEDGER_EGRESS_PROXY`): every connection tunnels through it. */
  proxy?: EgressProxy
  /** CA certificates trusted instead of Node's bundle (tests; a receiver behind a private CA). */
  ca?: string | Buffer
}

const REDIRECT_STATUSES: ReadonlySet<number> = new Set([301, 302, 303, 307, 308])
const EXCERPT_BYTES = 4096
const MAX_ERROR_LENGTH = 200
/** Managed by the agent or computed here; a caller's value could only corrupt the framing. */
const DROPPED_HEADERS: ReadonlySet<string> = new Set([
  'host',
  'connection',
  'content-length',
  'transfer-encoding',
  'keep-alive',
])

/** Raised inside the lookup so the connection fails before a socket ever opens. */
class EgressBlockedError extends Error {
  constructor(
    readonly address: string,
    readonly reason: string,
  ) {
    super(`egress blocked: ${address} (${reason})`)
  }
}

interface HopResponse {
  readonly status: number
  readonly location: string | null
  readonly retryAfter: string | null
  readonly bodyExcerpt: string
  readonly bodyTruncated: boolean
  readonly headers: Record<string, string>
  readonly address: string | null
}

/**
 * The HTTP transport with the egress guard. Every address is checked at connect time, on the
 * address actually connected to: DNS names through a guarded `lookup` (so a rebinding answer
 * cannot slip in between check and connect), IP literals before the request (Node never calls
 * `lookup` for them). Keep-alive sockets are pooled per host:port; a reused socket was checked
 * when it connected. With `proxy`, every socket is a CONNECT tunnel to the checked address
 * (proxy-connect.ts), the proxy's own address exempt from the policy.
 *
 * Redirects (301/302/303/307/308) to the endpoint's own origin are followed up to
 * `maxRedirects` hops, each hop checked again. Every hop re-sends the same POST with the same
 * body and headers, 301/302/303 included: a webhook is always a POST, and turning it into a
 * body-less GET (as browsers do) would make the receiver see a different request than the one
 * that was signed. A redirect to another origin is never followed (its 3xx is the answer,
 * `redirectRefused: cross_origin`); with the request's redirect rule `none`, no redirect is
 * (`redirectRefused: not_followed`).
 *
 * `post` never retries and never throws for network-level failures; it throws only for
 * programmer errors (a URL that is not absolute http(s), use after `close`).
 */
export function createHttpTransport(options: HttpTransportOptions): HttpTransport {
  const policy = options.policy
  const timeoutMs = options.timeoutMs ?? 10_000
  const maxRedirects = options.maxRedirects ?? 5
  const maxResponseBytes = options.maxResponseBytes ?? 64 * 1024
  const userAgent = options.userAgent ?? 'hookledger/0.1'
  const lookup = guardedLookup(options.lookup ?? dns.lookup, policy)
  const agentOptions: http.AgentOptions = {
    keepAlive: true,
    keepAliveMsecs: 1000,
    maxSockets: options.maxSockets ?? 256,
    scheduling: 'lifo',
    lookup,
  }
  // Through a proxy, each tunnel's socket → the checked target address (the socket's own peer
  // is the proxy), so the attempt records where it really went.
  const tunnelTargets = new WeakMap<Socket, string>()
  const { httpAgent, httpsAgent } =
    options.proxy === undefined
      ? { httpAgent: new http.Agent(agentOptions), httpsAgent: new https.Agent(agentOptions) }
      : createProxyAgents({
          proxy: options.proxy,
          resolveTarget: (host) => resolveChecked(lookup, policy, host),
          agentOptions,
          timeoutMs,
          tunnelTargets,
        })
  let closed = false

  function send(url: URL, headers: Record<string, string>, outgoing: OutgoingRequest, signal: AbortSignal): Promise<HopResponse> {
    return new Promise((resolve, reject) => {
      const secure = url.protocol === 'https:'
      const request = (secure ? https : http).request({
        method: 'POST',
        protocol: url.protocol,
        hostname: unbracket(url.hostname),
        port: url.port === '' ? undefined : Number(url.port),
        path: `${url.pathname}${url.search}`,
        headers,
        agent: secure ? httpsAgent : httpAgent,
        lookup, // also set on the agents; here so no code path can create an unguarded socket
        signal,
        ...(secure ? requestTlsOptions(outgoing.tls, options.ca) : {}),
      })
      request.on('error', reject) // `on`: a second late error must not become uncaught
      request.once('response', (response) => {
        // Taken before the body is read: a capped read destroys the socket and its address.
        const address = tunnelTargets.get(response.socket) ?? response.socket.remoteAddress ?? null
        readCapped(response, maxResponseBytes, signal).then((bytes) => {
          resolve({
            status: response.statusCode ?? 0,
            location: response.headers.location ?? null,
            retryAfter: firstHeader(response.headers['retry-after']),
            bodyExcerpt: excerpt(bytes),
            bodyTruncated: bytes.length > EXCERPT_BYTES,
            headers: keptResponseHeaders(response.headers),
            address,
          })
        }, reject)
      })
      request.end(outgoing.body)
    })
  }

  async function post(outgoing: OutgoingRequest): Promise<AttemptResult> {
    if (closed) throw new Error('http transport: post() after close()')
    const initial = parseHttpUrl(outgoing.url)
    if (initial === null) {
      throw new TypeError(`http transport: not an absolute http(s) URL: ${outgoing.url}`)
    }
    let url: URL = initial
    const headers = buildHeaders(outgoing, userAgent)
    const rule = outgoing.followRedirects ?? DEFAULT_FOLLOW_REDIRECTS
    const started = performance.now()
    const durationMs = () => Math.round(performance.now() - started)
    const deadline = new AbortController()
    const timer = setTimeout(() => deadline.abort(), timeoutMs)
    // The caller's signal (the job timeout) aborts the request the same way as our deadline.
    let aborted = false
    const onAbort = () => ((aborted = true), deadline.abort())
    if (outgoing.signal?.aborted) onAbort()
    else outgoing.signal?.addEventListener('abort', onAbort, { once: true })
    try {
      for (let redirects = 0; ; redirects++) {
        const literal = unbracket(url.hostname)
        if (isIP(literal) !== 0) {
          const decision = policy.check(literal)
          if (!decision.allowed) {
            return blocked(url, literal, decision.reason, durationMs())
          }
        }
        let response: HopResponse
        try {
          response = await send(url, headers, outgoing, deadline.signal)
        } catch (error) {
          if (deadline.signal.aborted) {
            return {
              kind: 'timeout',
              durationMs: durationMs(),
              error: aborted ? 'job timeout: the request was aborted' : `timed out after ${timeoutMs} ms`,
            }
          }
          if (error instanceof EgressBlockedError) {
            return blocked(url, error.address, error.reason, durationMs())
          }
          if (error instanceof ProxyConnectError) {
            return { kind: 'connection_error', durationMs: durationMs(), error: error.message.slice(0, MAX_ERROR_LENGTH) }
          }
          return { kind: 'connection_error', durationMs: durationMs(), error: errorCode(error) }
        }
        const next: URL | null =
          REDIRECT_STATUSES.has(response.status) && response.location !== null
            ? parseHttpUrl(response.location, url)
            : null
        // Includes a 3xx whose Location is missing or not http(s): the decider sees the 3xx.
        if (next === null) return answered(response, durationMs())
        // The signed headers (webhook-id, -timestamp, -signature) belong to the endpoint's origin:
        // a redirect elsewhere is not followed with them, and is the attempt's outcome; so is
        // any redirect of an endpoint that follows none.
        if (rule === 'none' || next.origin !== initial.origin) {
          const reason = rule === 'none' ? 'not_followed' : 'cross_origin'
          return { ...answered(response, durationMs()), redirectRefused: { location: next.href.slice(0, MAX_ERROR_LENGTH), reason } }
        }
        if (redirects >= maxRedirects) {
          const error = `more than ${maxRedirects} redirects, next: ${next.href}`
          return {
            kind: 'too_many_redirects',
            durationMs: durationMs(),
            error: error.slice(0, MAX_ERROR_LENGTH),
          }
        }
        url = next
      }
    } finally {
      clearTimeout(timer)
      outgoing.signal?.removeEventListener('abort', onAbort)
    }
  }

  return {
    post,
    async close() {
      closed = true
      httpAgent.destroy()
      httpsAgent.destroy()
    },
  }
}

/** The attempt's result when a hop's answer is the last one (not a redirect that is followed). */
function answered(response: HopResponse, durationMs: number): AttemptResult & { kind: 'response' } {
  return {
    kind: 'response',
    status: response.status,
    retryAfter: response.retryAfter,
    bodyExcerpt: response.bodyExcerpt,
    bodyTruncated: response.bodyTruncated,
    headers: response.headers,
    durationMs,
    address: response.address,
  }
}

/**
 * Wraps a resolver so that every candidate address is checked before Node may connect to any of
 * them. Node 20 asks with `all: true` (autoSelectFamily, happy eyeballs) and may try any of the
 * answers, so all must pass, not just the first; a name mixing public and private answers is
 * refused as a whole, which also makes the outcome independent of answer order.
 */
function guardedLookup(resolve: typeof dns.lookup, policy: EgressPolicy): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (error, answer) => {
      if (error) {
        callback(error, '')
        return
      }
      // A hand-written resolver may ignore `all` and answer with one address.
      const addresses: dns.LookupAddress[] = Array.isArray(answer)
        ? answer
        : [{ address: String(answer), family: isIP(String(answer)) }]
      const first = addresses[0]
      if (first === undefined) {
        callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), '')
        return
      }
      for (const { address } of addresses) {
        const decision = policy.check(address)
        if (!decision.allowed) {
          callback(new EgressBlockedError(address, decision.reason), '')
          return
        }
      }
      if (options.all) callback(null, addresses)
      else callback(null, first.address, first.family)
    })
  }
}

/**
 * The one address a tunnel goes to: an IP literal as it is, a name through the guarded lookup
 * (every answer checked, the first taken). Either way the policy has passed it.
 */
function resolveChecked(lookup: LookupFunction, policy: EgressPolicy, host: string): Promise<string> {
  const literal = unbracket(host)
  if (isIP(literal) !== 0) {
    const decision = policy.check(literal)
    return decision.allowed ? Promise.resolve(literal) : Promise.reject(new EgressBlockedError(literal, decision.reason))
  }
  return new Promise((resolve, reject) => {
    lookup(literal, { all: false }, (error, address) => (error ? reject(error) : resolve(String(address))))
  })
}

/**
 * Reads at most `max` bytes. Stopping early destroys the stream (and so the socket): draining an
 * unbounded body would hold the slot for as long as the receiver cares to send.
 */
async function readCapped(
  response: http.IncomingMessage,
  max: number,
  signal: AbortSignal,
): Promise<Buffer> {
  // The request's signal destroys the request; make sure a half-read body stops with it.
  const onAbort = () => response.destroy(new Error('aborted'))
  signal.addEventListener('abort', onAbort, { once: true })
  try {
    const chunks: Buffer[] = []
    let total = 0
    for await (const chunk of response) {
      const bytes = chunk as Buffer
      const room = max - total
      if (bytes.length >= room) {
        chunks.push(bytes.subarray(0, room))
        total = max
        break // leaving the loop destroys the stream
      }
      chunks.push(bytes)
      total += bytes.length
    }
    return Buffer.concat(chunks, total)
  } finally {
    signal.removeEventListener('abort', onAbort)
  }
}

/** First ≤ 4 KiB as UTF-8; `stream: true` drops a character cut in half at the boundary. */
function excerpt(bytes: Buffer): string {
  return new TextDecoder('utf-8').decode(bytes.subarray(0, EXCERPT_BYTES), { stream: true })
}

function buildHeaders(request: OutgoingRequest, userAgent: string): Record<string, string> {
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(request.headers)) {
    const key = name.toLowerCase()
    if (!DROPPED_HEADERS.has(key)) headers[key] = value
  }
  headers['content-type'] ??= 'application/json'
  headers['user-agent'] ??= userAgent
  headers['content-length'] = String(Buffer.byteLength(request.body))
  return headers
}

function parseHttpUrl(text: string, base?: URL): URL | null {
  try {
    const url = new URL(text, base)
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : null
  } catch {
    return null
  }
}

/** WHATWG keeps IPv6 hosts bracketed; Node's request and isIP want them bare. */
function unbracket(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname
}

function firstHeader(value: string | string[] | undefined): string | null {
  if (value === undefined) return null
  return Array.isArray(value) ? (value[0] ?? null) : value
}

function blocked(url: URL, address: string, reason: string, durationMs: number): AttemptResult {
  return { kind: 'egress_blocked', durationMs, address, url: url.href, error: reason }
}

/** A short, stable string: the errno code when there is one (`ECONNREFUSED`, `ENOTFOUND`, …). */
function errorCode(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as NodeJS.ErrnoException).code
    if (typeof code === 'string') return code
    // autoSelectFamily reports an AggregateError when every address failed.
    if (error instanceof AggregateError) {
      const inner: unknown = error.errors[0]
      if (inner instanceof Error) return errorCode(inner)
    }
    return error.message.slice(0, MAX_ERROR_LENGTH) || error.name
  }
  return String(error).slice(0, MAX_ERROR_LENGTH)
}
