import type { OutgoingTls } from '@hookledger/core'

/**
 * The TLS options of one https request: the endpoint's client certificate and key (mTLS), and
 * the CA its receiver must chain to — the endpoint's pinned one, else the transport's (else
 * Node's bundle). Set per request rather than on the agent because an agent's own options
 * override a request's; the agent keys its pooled sockets by these, so a socket opened with one
 * endpoint's certificate is never reused for another's. The proxy's tunnels pass them on to
 * `tls.connect` (proxy-connect.ts).
 */
export function requestTlsOptions(tls: OutgoingTls | undefined, defaultCa: string | Buffer | undefined): {
  cert?: string
  key?: string
  ca?: string | Buffer
} {
  const ca = tls?.ca ?? defaultCa
  return {
    ...(tls?.cert !== undefined ? { cert: tls.cert } : {}),
    ...(tls?.key !== undefined ? { key: tls.key } : {}),
    ...(ca !== undefined ? { ca } : {}),
  }
}
