import { serve, type ServerType } from '@hono/node-server'
import { StartupError } from './startup-error.js'

type Fetch = (request: Request) => Response | Promise<Response>

/** A bound HTTP listener whose handler is set once the service is ready. */
export interface HttpListener {
  readonly server: ServerType
  readonly port: number
  setHandler(fetch: Fetch): void
  close(): Promise<void>
}

const starting: Fetch = () =>
  new Response(JSON.stringify({ type: 'about:blank', title: 'starting', status: 503, code: 'starting', detail: 'hookledger is starting' }), {
    status: 503,
    headers: { 'content-type': 'application/problem+json', 'retry-after': '1' },
  })

/**
 * Binds the port before anything slow starts (the database, migrations), so a port in use is
 * a one-line start-up failure at once; until `setHandler`, requests answer 503 "starting".
 */
export function listenHttp(options: { port: number; host: string }): Promise<HttpListener> {
  let handler: Fetch = starting
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: (req) => handler(req), port: options.port, hostname: options.host }, (info) => {
      server.off('error', onError)
      server.on('error', () => {})
      resolve({
        server,
        port: info.port,
        setHandler: (fetch) => (handler = fetch),
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done())
            ;(server as unknown as { closeIdleConnections?: () => void }).closeIdleConnections?.()
          }),
      })
    })
    const onError = (err: NodeJS.ErrnoException) => {
      const where = `${options.host}:${options.port}`
      const why =
        err.code === 'EADDRINUSE'
          ? `port ${options.port} on ${options.host} is already in use (another hookledger?): set PORT to a free port, or PORT=0 for any`
          : err.code === 'EACCES'
            ? `not allowed to listen on ${where}: use a port above 1023 (PORT)`
            : err.code === 'EADDRNOTAVAIL'
              ? `${options.host} is not an address of this machine (HOST)`
              : `cannot listen on ${where}: ${err.message}`
      reject(new StartupError(why, { cause: err }))
    }
    server.once('error', onError)
  })
}
