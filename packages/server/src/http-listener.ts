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

/** A `.` or `..` path segment, plain or percent-encoded (`%2e`, `%2E`), in a raw request target. */
const DOT_SEGMENT = /(?:^|\/)(?:\.|%2e){1,2}(?:\/|$)/i

/** Whether the request target as it came off the wire (before URL parsing resolves it) has a dot segment. */
export function hasDotSegment(target: string): boolean {
  const path = target.split(/[?#]/, 1)[0] ?? ''
  return DOT_SEGMENT.test(path)
}

const dotSegmentRefused = () =>
  new Response(
    JSON.stringify({ type: 'about:blank', title: 'invalid path', status: 400, code: 'invalid_path', detail: 'the path has a "." or ".." segment; name the resource directly' }),
    { status: 400, headers: { 'content-type': 'application/problem+json' } },
  )

/**
 * Binds the port before anything slow starts (the database, migrations), so a port in use is
 * a one-line start-up failure at once; until `setHandler`, requests answer 503 "starting".
 */
export function listenHttp(options: { port: number; host: string }): Promise<HttpListener> {
  let handler: Fetch = starting
  return new Promise((resolve, reject) => {
    // A dot segment is refused on the raw target: URL parsing would resolve it to another route
    // (`/api/admin/webhooks/%2e%2e/deliveries` is the delivery log) before any handler sees it.
    const fetch = (req: Request, env: { incoming?: { url?: string } }) => (hasDotSegment(env?.incoming?.url ?? '') ? dotSegmentRefused() : handler(req))
    const server = serve({ fetch: fetch as never, port: options.port, hostname: options.host }, (info) => {
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
