import { createServer, type Server } from 'node:http'

/** One request as the receiver saw it. */
export interface ReceiverHit {
  readonly endpoint: number
  readonly eventId: string
  readonly receivedAt: number
  /** Set once the answer was sent in full (a killed sender never reads it). */
  answeredAt: number | null
  /** The status it was answered with (null until answered). */
  status: number | null
}

/**
 * A real HTTP receiver on loopback for many endpoints at once (`/ep/<n>`): records every
 * request by event id, so a fault run can count what was lost and what came twice, and tracks
 * how many requests were in flight at once per endpoint — the contract is never two. A request
 * stays in flight until its connection is done with it (answered, or cut by a killed worker).
 */
export class VerifyingReceiver {
  readonly hits: ReceiverHit[] = []
  /** Each time a request arrived while another to the same endpoint was in flight: both. */
  readonly overlaps: { endpoint: number; arrived: ReceiverHit; inFlight: ReceiverHit[] }[] = []
  readonly #inFlight = new Map<number, Set<ReceiverHit>>()
  readonly #maxInFlight = new Map<number, number>()
  readonly #server: Server
  port = 0

  /** Arrivals (0-based, across endpoints) never answered: held until their connection closes (a killed worker). */
  readonly held = new Set<number>()

  constructor(readonly options: { delayMs?: number; status?: number; statusOf?: (eventId: string, nth: number) => number } = {}) {
    this.#server = createServer((req, res) => {
      const endpoint = Number(/^\/ep\/(\d+)$/.exec(req.url ?? '')?.[1] ?? -1)
      const hit: ReceiverHit = { endpoint, eventId: String(req.headers['webhook-id'] ?? ''), receivedAt: performance.now(), answeredAt: null, status: null }
      const nth = this.hits.filter((h) => h.eventId === hit.eventId).length
      const hold = this.held.has(this.hits.length)
      this.hits.push(hit)
      const flying = this.#inFlight.get(endpoint) ?? new Set()
      if (flying.size > 0) this.overlaps.push({ endpoint, arrived: hit, inFlight: [...flying] })
      this.#inFlight.set(endpoint, flying.add(hit))
      this.#maxInFlight.set(endpoint, Math.max(this.#maxInFlight.get(endpoint) ?? 0, flying.size))
      res.on('close', () => flying.delete(hit))
      req.resume()
      req.on('end', () => {
        if (hold) return
        const answer = () => {
          const status = this.options.statusOf?.(hit.eventId, nth) ?? this.options.status ?? 204
          res.writeHead(status)
          res.end(() => {
            hit.answeredAt = performance.now()
            hit.status = status
          })
        }
        if (this.options.delayMs) setTimeout(answer, this.options.delayMs)
        else answer()
      })
    })
    this.#server.keepAliveTimeout = 30_000
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve))
    this.port = (this.#server.address() as { port: number }).port
    return this
  }

  url(endpoint: number): string {
    return `http://127.0.0.1:${this.port}/ep/${endpoint}`
  }

  /** The requests being answered right now. */
  inFlight(): ReceiverHit[] {
    return [...this.#inFlight.values()].flatMap((s) => [...s])
  }

  /** The most requests ever in flight at once to one endpoint. */
  maxInFlightPerEndpoint(): number {
    return Math.max(0, ...this.#maxInFlight.values())
  }

  /** Distinct (endpoint, event) pairs answered in full. */
  answered(): Set<string> {
    return new Set(this.hits.filter((h) => h.answeredAt !== null).map((h) => `${h.endpoint}/${h.eventId}`))
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections()
    await new Promise<void>((resolve) => this.#server.close(() => resolve()))
  }
}
