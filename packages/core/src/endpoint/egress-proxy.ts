/**
 * The operator's egress proxy (`HOOKLEDGER_EGRESS_PROXY`): where deliveries leave through, e.g. to
 * go out from a few static IPs. Pure: the setting parsed once, at start; the worker's transport
 * opens the tunnels (CONNECT) through it.
 */
export interface EgressProxy {
  /** Host name or IP (IPv6 without brackets). */
  readonly host: string
  readonly port: number
  /** `host:port`: what errors and logs name. Never the credentials. */
  readonly label: string
  /** The `Proxy-Authorization` value (`Basic …`) from the URL's user info, or null. */
  readonly authorization: string | null
}

const SHAPE = 'http://[user:password@]host:port'

/**
 * Parses `http://[user:password@]host[:port]` (port 80 when left out). Only plain-HTTP proxies:
 * the tunnel to an https receiver is TLS end to end through it anyway. The errors never repeat
 * the value, which may hold a password.
 * @throws Error saying what is wrong.
 */
export function parseEgressProxy(text: string): EgressProxy {
  let url: URL
  try {
    url = new URL(text.trim())
  } catch {
    throw new Error(`is not a URL (expected ${SHAPE})`)
  }
  if (url.protocol !== 'http:') {
    throw new Error(`scheme must be http, not ${url.protocol.slice(0, -1)} (expected ${SHAPE})`)
  }
  if (url.hostname === '') throw new Error(`has no host (expected ${SHAPE})`)
  if ((url.pathname !== '/' && url.pathname !== '') || url.search !== '' || url.hash !== '') {
    throw new Error(`must have no path, query or fragment (expected ${SHAPE})`)
  }
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
  const port = url.port === '' ? 80 : Number(url.port)
  let authorization: string | null = null
  if (url.username !== '' || url.password !== '') {
    let user: string
    let password: string
    try {
      user = decodeURIComponent(url.username)
      password = decodeURIComponent(url.password)
    } catch {
      throw new Error('has badly percent-encoded user info')
    }
    authorization = `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`
  }
  return Object.freeze({ host, port, label: `${url.hostname}:${port}`, authorization })
}
