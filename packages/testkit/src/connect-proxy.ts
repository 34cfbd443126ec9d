import { createServer, request, STATUS_CODES, type IncomingMessage, type Server } from 'node:http'
import { connect, type Socket } from 'node:net'

/** One thing the proxy was asked: a CONNECT tunnel or an absolute-form request. */
export interface ProxyRequestSeen {
  /** `CONNECT`, or the forwarded request's method. */
  readonly method: string
  /** `host:port` for CONNECT, the absolute URL for a forwarded request. */
  readonly target: string
  /** The `Proxy-Authorization` header as sent, or null. */
  readonly authorization: string | null
}

/**
 * A small forward proxy on loopback, as an operator's egress proxy: `CONNECT host:port` opens a
 * tunnel, an absolute-form request (`POST http://host/path`) is forwarded. It records what it was
 * asked (`seen`); `refuse` makes it answer everything with that status instead (403, 407, 502).
 */
export class ConnectProxy {
  readonly seen: ProxyRequestSeen[] = []
  /** A status to answer every CONNECT and request with instead of forwarding; null forwards. */
  refuse: number | null = null
  host = '127.0.0.1'
  port = 0
  readonly #server: Server
  readonly #sockets = new Set<Socket>()

  constructor() {
    this.#server = createServer((req, res) => {
      this.#record(req, req.url ?? '')
      if (this.refuse !== null) {
        res.writeHead(this.refuse).end()
        return
      }
      let target: URL
      try {
        target = new URL(req.url ?? '')
      } catch {
        res.writeHead(400).end('absolute-form only')
        return
      }
      const upstream = request(target, { method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers)
        answer.pipe(res)
      })
      upstream.on('error', () => res.writeHead(502).end())
      req.pipe(upstream)
    })
    this.#server.on('connection', (socket: Socket) => this.#track(socket))
    this.#server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
      this.#record(req, req.url ?? '')
      if (this.refuse !== null) {
        client.end(`HTTP/1.1 ${this.refuse} ${STATUS_CODES[this.refuse] ?? ''}\r\n\r\n`)
        return
      }
      const { hostname, port } = new URL(`http://${req.url ?? ''}`)
      const upstream = this.#track(connect({ host: hostname.replace(/^\[|\]$/g, ''), port: Number(port) }))
      upstream.once('connect', () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n')
        if (head.length > 0) upstream.write(head)
        upstream.pipe(client)
        client.pipe(upstream)
      })
      upstream.on('error', () => client.end('HTTP/1.1 502 Bad Gateway\r\n\r\n'))
      client.on('error', () => upstream.destroy())
    })
  }

  /** Listens on `host` (127.0.0.1; another loopback address to tell it from a receiver) and a free port (`port`). */
  async start(host = '127.0.0.1'): Promise<this> {
    this.host = host
    await new Promise<void>((resolve) => this.#server.listen(0, host, resolve))
    this.port = (this.#server.address() as { port: number }).port
    return this
  }

  /** `http://<host>:<port>`, as HOOKLEDGER_EGRESS_PROXY would name it. */
  get url(): string {
    return `http://${this.host}:${this.port}`
  }

  /** Closes the listener and every connection and tunnel through it. */
  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy()
    await new Promise<void>((resolve) => this.#server.close(() => resolve()))
  }

  #record(req: IncomingMessage, target: string): void {
    const authorization = req.headers['proxy-authorization'] ?? null
    this.seen.push({ method: req.method ?? '', target, authorization })
  }

  #track(socket: Socket): Socket {
    this.#sockets.add(socket)
    socket.once('close', () => this.#sockets.delete(socket))
    return socket
  }
}
