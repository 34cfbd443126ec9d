import * as http from 'node:http'
import * as https from 'node:https'
import * as net from 'node:net'
import * as tls from 'node:tls'
import type { EgressProxy } from '@hookledger/core'

/**
 * A proxy that refused or failed to open a tunnel. Its message names the proxy by `host:port`
 * (never its credentials) and what it answered; the transport records it as a
 * `connection_error` attempt.
 */
export class ProxyConnectError extends Error {}

/** Bytes of a CONNECT answer's head read at most: a proxy's answer is a few lines. */
const MAX_HEAD_BYTES = 8 * 1024

/**
 * Opens a tunnel through `proxy` to `address:port` (an IP the egress guard has checked) with
 * `CONNECT`, and resolves with the socket once the proxy answered 2xx. The proxy's own address
 * is not put to the egress policy: the operator named it, and it is usually private.
 */
export function openProxyTunnel(
  proxy: EgressProxy,
  address: string,
  port: number,
  timeoutMs: number,
): Promise<net.Socket> {
  const authority = net.isIPv6(address) ? `[${address}]:${port}` : `${address}:${port}`
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: proxy.host, port: proxy.port })
    let head = Buffer.alloc(0)
    const fail = (message: string) => {
      socket.destroy()
      reject(new ProxyConnectError(`proxy ${proxy.label} ${message}`))
    }
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk])
      const end = head.indexOf('\r\n\r\n')
      if (end === -1) {
        if (head.length > MAX_HEAD_BYTES) fail(`answered CONNECT ${authority} with an overlong head`)
        return
      }
      cleanup()
      const statusLine = head.subarray(0, head.indexOf('\r\n')).toString('latin1')
      const match = /^HTTP\/1\.[01] (\d{3})(?: (.*))?$/.exec(statusLine)
      if (match === null) {
        fail(`answered CONNECT ${authority} with no HTTP status line`)
        return
      }
      const status = Number(match[1])
      if (status < 200 || status > 299) {
        const reason = (match[2] ?? '').slice(0, 60)
        fail(`refused CONNECT ${authority}: ${status}${reason === '' ? '' : ` ${reason}`}`)
        return
      }
      socket.setTimeout(0)
      // Bytes past the head already belong to the tunnel (a receiver that speaks first).
      const rest = head.subarray(end + 4)
      if (rest.length > 0) socket.unshift(rest)
      resolve(socket)
    }
    const onError = (error: NodeJS.ErrnoException) => fail(`unreachable: ${error.code ?? error.message}`)
    const onClose = () => fail(`closed the connection before answering CONNECT ${authority}`)
    const onTimeout = () => fail(`did not answer CONNECT ${authority} within ${timeoutMs} ms`)
    const cleanup = () => {
      socket.off('data', onData)
      socket.off('error', onError)
      socket.off('close', onClose)
      socket.off('timeout', onTimeout)
    }
    socket.on('data', onData)
    socket.once('error', onError)
    socket.once('close', onClose)
    socket.once('timeout', onTimeout)
    socket.setTimeout(timeoutMs)
    socket.once('connect', () => {
      const lines = [`CONNECT ${authority} HTTP/1.1`, `Host: ${authority}`]
      if (proxy.authorization !== null) lines.push(`Proxy-Authorization: ${proxy.authorization}`)
      socket.write(`${lines.join('\r\n')}\r\n\r\n`)
    })
  })
}

/** Options of {@link createProxyAgents}. */
export interface ProxyAgentOptions {
  readonly proxy: EgressProxy
  /** The guarded resolution: the one address to tunnel to, after the egress policy passed it. */
  readonly resolveTarget: (host: string) => Promise<string>
  readonly agentOptions: https.AgentOptions
  /** How long the proxy may take to answer CONNECT. */
  readonly timeoutMs: number
  /** Filled with each tunnel's socket (TLS or not) → the target address it was opened to. */
  readonly tunnelTargets: WeakMap<net.Socket, string>
}

type CreateConnection = (
  options: https.RequestOptions,
  callback: (error: Error | null, socket?: net.Socket) => void,
) => undefined

/**
 * Agents whose every socket is a tunnel through the operator's proxy, for http and https targets
 * alike: CONNECT is used for plain http too (not an absolute-form request line), so the proxy
 * never resolves a name itself. That is how DNS rebinding is kept out: the name is resolved once,
 * by the guarded resolver, every answer is checked against the egress policy, and the CONNECT
 * names the checked IP — the proxy connects to exactly that address. For https, TLS then runs
 * through the tunnel with `servername` = the URL's host, so the certificate is checked against
 * the name, not the IP. Keep-alive pooling works as without a proxy: per target host:port, a
 * pooled socket being a tunnel that was checked when it was opened.
 */
export function createProxyAgents(options: ProxyAgentOptions): { httpAgent: http.Agent; httpsAgent: https.Agent } {
  const { proxy, resolveTarget, timeoutMs, tunnelTargets } = options
  async function tunnel(request: https.RequestOptions): Promise<{ socket: net.Socket; address: string }> {
    const host = request.host ?? request.hostname ?? 'localhost'
    const port = Number(request.port)
    const address = await resolveTarget(host)
    const socket = await openProxyTunnel(proxy, address, port, timeoutMs)
    tunnelTargets.set(socket, address)
    return { socket, address }
  }
  const httpAgent = new http.Agent(options.agentOptions)
  const httpsAgent = new https.Agent(options.agentOptions)
  // Node's agents call createConnection(options, callback) and take the socket from the callback
  // when it returns nothing, which lets the tunnel be opened asynchronously.
  const plain: CreateConnection = (request, callback) => {
    tunnel(request).then(({ socket }) => callback(null, socket), (error: Error) => callback(error))
    return undefined
  }
  const secure: CreateConnection = (request, callback) => {
    tunnel(request).then(({ socket, address }) => {
      // `request` carries what https.Agent set: servername (the URL's host), ca, checkServerIdentity.
      const secured = tls.connect({ ...(request as tls.ConnectionOptions), socket })
      tunnelTargets.set(secured, address)
      callback(null, secured)
    }, (error: Error) => callback(error))
    return undefined
  }
  Object.assign(httpAgent, { createConnection: plain })
  Object.assign(httpsAgent, { createConnection: secure })
  return { httpAgent, httpsAgent }
}
