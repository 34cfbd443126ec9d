import { connect, createServer, type Server, type Socket } from 'node:net'

/**
 * A loopback TCP proxy in front of one server (PostgreSQL) that can black-hole its traffic: a
 * network partition, not a reset. While black-holed nothing is forwarded either way, yet every
 * socket stays open and new connections are still accepted — so a client sees its queries hang,
 * as across a dead link, rather than an error it could react to at once. Forwarding stops by
 * pausing the sockets (TCP's own backpressure holds the bytes), so a heal lets the held bytes
 * through late, as retransmission would; connections opened during the partition reach the
 * server only after it.
 */
export class TcpProxy {
  readonly #target: { host: string; port: number }
  readonly #server: Server
  readonly #sockets = new Set<Socket>()
  #blackholed = false
  port = 0

  constructor(target: { host?: string; port: number }) {
    this.#target = { host: target.host ?? '127.0.0.1', port: target.port }
    this.#server = createServer((client) => this.#pair(client))
  }

  /** Listens on 127.0.0.1 and a free port (`port`). */
  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve))
    this.port = (this.#server.address() as { port: number }).port
    return this
  }

  /** Whether traffic is being black-holed now. */
  get blackholed(): boolean {
    return this.#blackholed
  }

  /** Stops forwarding both ways; sockets stay open and new ones are accepted. */
  blackhole(): void {
    this.#blackholed = true
    for (const s of this.#sockets) s.pause()
  }

  /** Forwards again, held bytes first. */
  heal(): void {
    this.#blackholed = false
    for (const s of this.#sockets) s.resume()
  }

  /** Closes the listener and every connection through it. */
  async close(): Promise<void> {
    for (const s of this.#sockets) s.destroy()
    await new Promise<void>((resolve) => this.#server.close(() => resolve()))
  }

  #pair(client: Socket): void {
    const upstream = connect(this.#target)
    for (const [from, to] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      this.#sockets.add(from)
      from.on('data', (chunk: Buffer) => {
        // Backpressure: a slow side pauses the other, which a heal must not undo by itself.
        if (!to.write(chunk)) {
          from.pause()
          to.once('drain', () => this.#blackholed || from.resume())
        }
      })
      // An end or error on one side ends the other, as on a real link (only after a heal: a
      // paused socket reads no FIN).
      from.on('end', () => to.end())
      from.on('error', () => to.destroy())
      from.on('close', () => {
        this.#sockets.delete(from)
        to.destroy()
      })
      if (this.#blackholed) from.pause()
    }
  }
}
