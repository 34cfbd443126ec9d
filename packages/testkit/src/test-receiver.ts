import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'

/** One request as the receiver saw it. */
export interface ReceivedRequest {
  readonly method: string
  readonly path: string
  readonly headers: IncomingHttpHeaders
  readonly body: string
  readonly receivedAt: number
}

/** What to answer: a status, optional headers and body, optional delay before answering. */
export interface ScriptedReply {
  readonly status: number
  readonly headers?: Record<string, string>
  readonly body?: string
  readonly delayMs?: number
}

export type ReplyScript = ScriptedReply | ((req: ReceivedRequest, index: number) => ScriptedReply)

/**
 * A real HTTP receiver on loopback: answers from a script (a fixed reply, a queue of replies,
 * or a function), records every request, and tracks how many were in flight at once.
 */
export class TestReceiver {
  readonly requests: ReceivedRequest[] = []
  maxConcurrent = 0
  #inFlight = 0
  #queue: ScriptedReply[] = []
  #fallback: ReplyScript
  #server: Server
  #waiters: { n: number; resolve: () => void }[] = []
  port = 0

  constructor(fallback: ReplyScript = { status: 204 }) {
    this.#fallback = fallback
    this.#server = createServer((req, res) => {
      this.#inFlight++
      this.maxConcurrent = Math.max(this.maxConcurrent, this.#inFlight)
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        const received: ReceivedRequest = {
          method: req.method ?? '',
          path: req.url ?? '',
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          receivedAt: performance.now(),
        }
        const index = this.requests.length
        this.requests.push(received)
        this.#notify()
        const next = this.#queue.shift() ?? this.#fallback
        const reply = typeof next === 'function' ? next(received, index) : next
        const send = () => {
          this.#inFlight--
          res.writeHead(reply.status, reply.headers ?? {})
          res.end(reply.body ?? '')
        }
        if (reply.delayMs) setTimeout(send, reply.delayMs)
        else send()
      })
    })
    this.#server.keepAliveTimeout = 30_000
  }

  /** Starts listening on 127.0.0.1 and a free port. */
  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve))
    this.port = (this.#server.address() as { port: number }).port
    return this
  }

  url(path = '/hook'): string {
    return `http://127.0.0.1:${this.port}${path}`
  }

  /** Answers the next requests with these replies, then falls back to the default. */
  enqueue(...replies: ScriptedReply[]): this {
    this.#queue.push(...replies)
    return this
  }

  /** Changes the default answer. */
  answer(script: ReplyScript): this {
    this.#fallback = script
    return this
  }

  /** Resolves once `n` requests in total have arrived. */
  waitFor(n: number, timeoutMs = 10_000): Promise<void> {
    if (this.requests.length >= n) return Promise.resolve()
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`receiver saw ${this.requests.length} of ${n} requests`)), timeoutMs)
      this.#waiters.push({ n, resolve: () => (clearTimeout(t), resolve()) })
    })
  }

  #notify() {
    this.#waiters = this.#waiters.filter((w) => {
      if (this.requests.length >= w.n) {
        w.resolve()
        return false
      }
      return true
    })
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections()
    await new Promise<void>((resolve) => this.#server.close(() => resolve()))
  }
}
