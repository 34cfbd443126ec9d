import { createServer, type IncomingMessage } from 'node:http'
import { parseArgs } from 'node:util'
import { Webhook } from 'standardwebhooks'
import { createSecretBox } from '@hookledger/core'
import type { CliIo } from '@hookledger/cli'
import type { Config } from './config.js'
import { loadMasterKey } from './key-files.js'

/** A request body larger than this is refused (hookledger's are thin: well under it). */
const BODY_LIMIT_BYTES = 1024 * 1024

const readBody = (req: IncomingMessage) =>
  new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    req.on('data', (c: Buffer) => {
      size += c.length
      if (size > BODY_LIMIT_BYTES) req.destroy(new Error('body too large'))
      else chunks.push(c)
    })
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    req.on('error', reject)
  })

/**
 * `hookledger listen [--port 9000] [--host 127.0.0.1] [--secret whsec_…]… [--status 204]
 * [--count N] [--json]`: a receiver for trying hookledger out on one machine. Each request is
 * checked the way a receiver should check it — its Standard Webhooks signature (id, timestamp
 * tolerance, HMAC), with the `standardwebhooks` library rather than hookledger's own signing
 * code — against the `--secret`s given or, without one, the secrets (current and, in its grace
 * window, previous) of the endpoint whose URL it was sent to, read from this installation's
 * database; one line is printed per arrival (id, type, subject, verified or why not). A verified
 * request is answered `--status` (204), a forged one 401, one for a URL no endpoint has
 * `--status` (printed as unchecked). `--count N` exits 0 after N verified arrivals.
 */
export async function listenCommand(config: Config, argv: string[], io: CliIo): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: 'string', default: '9000' },
      host: { type: 'string', default: '127.0.0.1' },
      secret: { type: 'string', multiple: true },
      status: { type: 'string', default: '204' },
      count: { type: 'string' },
      json: { type: 'boolean' },
    },
  })
  const given = values.secret ?? []
  const status = Number(values.status)
  if (!Number.isInteger(status) || status < 200 || status > 599) return (io.err(`--status must be an HTTP status 200–599, got "${values.status}"`), 2)
  const badSecret = given.find((s) => !/^whsec_[A-Za-z0-9+/=]+$/.test(s))
  if (badSecret !== undefined) return (io.err('--secret must be a whsec_… secret, as the endpoint\'s create or rotate answer gives it'), 2)
  const port = Number(values.port)
  const count = values.count === undefined ? Infinity : Number(values.count)
  if (!Number.isInteger(port) || port < 0 || port > 65535) return (io.err(`--port must be 0–65535, got "${values.port}"`), 2)
  if (!(count > 0)) return (io.err(`--count must be a positive integer, got "${values.count}"`), 2)
  // With --secret, nothing else is needed; without, the secrets come from this installation.
  const { createLogger, openDatabase } = await import('./service.js')
  const database = given.length > 0 ? null : await openDatabase(config, createLogger({ LOG_LEVEL: 'warn' }, process.stderr), 2)
  const box = database ? createSecretBox(loadMasterKey(config)) : null
  let verified = 0
  let done!: () => void
  const finished = new Promise<void>((r) => (done = r))

  const secretsFor = async (url: string): Promise<{ endpoint_id: string; secrets: string[] } | null> => {
    if (!database || !box) return { endpoint_id: '(--secret)', secrets: given }
    const e = await database.db
      .selectFrom('endpoints')
      .select(['id', 'secret_sealed', 'prev_secret_sealed', 'prev_secret_expires_at'])
      .where('url', '=', url)
      .where('deleted_at', 'is', null)
      .orderBy('created_at', 'desc')
      .limit(1)
      .executeTakeFirst()
    if (!e) return null
    const secrets = [box.open(e.secret_sealed)]
    if (e.prev_secret_sealed && e.prev_secret_expires_at && e.prev_secret_expires_at > new Date()) secrets.push(box.open(e.prev_secret_sealed))
    return { endpoint_id: e.id, secrets }
  }

  const server = createServer(async (req, res) => {
    try {
      const body = await readBody(req)
      const url = `http://${req.headers.host ?? `${values.host}:${port}`}${req.url ?? '/'}`
      const endpoint = await secretsFor(url)
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]))
      let why = ''
      const ok = endpoint?.secrets.some((secret) => {
        try {
          new Webhook(secret).verify(body, headers)
          return true
        } catch (err) {
          why = (err as Error).message
          return false
        }
      })
      const signature = endpoint === null ? 'unchecked' : ok ? 'verified' : 'invalid'
      let event: { id?: string; type?: string; subject?: string } = {}
      try {
        event = JSON.parse(body) as typeof event
      } catch {
        // not JSON: printed as is below
      }
      if (values.json) io.out(JSON.stringify({ webhook_id: headers['webhook-id'] ?? null, type: event.type ?? null, subject: event.subject ?? null, url, endpoint_id: endpoint?.endpoint_id ?? null, signature, ...(why && !ok ? { why } : {}) }))
      else io.out(`${headers['webhook-id'] ?? '-'} ${event.type ?? '?'} ${event.subject ?? ''} — signature ${signature}${signature === 'invalid' ? ` (${why})` : endpoint ? ` (endpoint ${endpoint.endpoint_id})` : ' (no endpoint has this URL)'}`)
      res.writeHead(signature === 'invalid' ? 401 : status).end()
      if (signature === 'verified' && ++verified >= count) done()
    } catch (err) {
      res.writeHead(500).end()
      io.err(`listen: ${(err as Error).message}`)
    }
  })
  const listening = await new Promise<number>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, values.host, () => resolve((server.address() as { port: number }).port))
  }).catch((err: NodeJS.ErrnoException) => {
    io.err(`hookledger listen: cannot listen on ${values.host}:${port} (${err.code ?? err.message})`)
    return null
  })
  if (listening === null) {
    await database?.close()
    return 1
  }
  io.out(`listening on http://${values.host}:${listening} — point an endpoint here, e.g. http://${values.host}:${listening}/hook`)
  const stop = () => done()
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
  await finished
  process.off('SIGINT', stop)
  process.off('SIGTERM', stop)
  server.closeAllConnections()
  await new Promise<void>((r) => server.close(() => r()))
  await database?.close()
  return 0
}
