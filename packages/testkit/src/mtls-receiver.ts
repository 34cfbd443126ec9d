import { createServer, type Server } from 'node:https'
import type { IncomingHttpHeaders } from 'node:http'
import type { TLSSocket } from 'node:tls'
import type { TestCa } from './test-ca.js'

/** One request as the mTLS receiver saw it, with the client certificate it came with. */
export interface MtlsReceivedRequest {
  readonly path: string
  readonly headers: IncomingHttpHeaders
  readonly body: string
  /** The CN of the client certificate the TLS handshake verified. */
  readonly clientCommonName: string | null
}

/**
 * A real https receiver on 127.0.0.1 that demands a client certificate issued by the test CA
 * (a connection without one, or with another CA's, fails in the handshake), as a receiver that
 * authenticates its callers by mTLS. Answers every request with `status`.
 */
export class MtlsReceiver {
  readonly requests: MtlsReceivedRequest[] = []
  /** Handshakes refused (no certificate, or not one of the CA's). */
  refusedHandshakes = 0
  status = 200
  port = 0
  readonly #server: Server

  constructor(ca: TestCa) {
    this.#server = createServer({ key: ca.server.private_key, cert: ca.server.certificate, ca: ca.ca, requestCert: true, rejectUnauthorized: true }, (req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        const peer = (req.socket as TLSSocket).getPeerCertificate()
        this.requests.push({
          path: req.url ?? '',
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          clientCommonName: typeof peer?.subject?.CN === 'string' ? peer.subject.CN : null,
        })
        res.writeHead(this.status).end()
      })
    })
    this.#server.on('tlsClientError', () => void this.refusedHandshakes++)
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve))
    this.port = (this.#server.address() as { port: number }).port
    return this
  }

  url(path = '/hook'): string {
    return `https://127.0.0.1:${this.port}${path}`
  }

  close(): Promise<void> {
    return new Promise((resolve) => (this.#server.closeAllConnections(), this.#server.close(() => resolve())))
  }
}
