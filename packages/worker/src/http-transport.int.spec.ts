import type * as dns from 'node:dns'
import * as http from 'node:http'
import { isIP, type AddressInfo, type Socket } from 'node:net'
import { createEgressPolicy, type HttpTransport } from '@hookledger/core'
import { afterEach, describe, expect, it } from 'vitest'
import { eventually } from '@hookledger/testkit'
import { createHttpTransport, type HttpTransportOptions } from './http-transport.js'

// Everything here talks to real node:http servers on loopback. Addresses outside loopback only
// ever appear as targets the guard must refuse before a socket is opened.

interface TestServer {
  readonly port: number
  readonly url: string
  readonly requests: Array<{
    method: string
    url: string
    headers: http.IncomingHttpHeaders
    body: string
  }>
  readonly sockets: Set<Socket>
  connections: number
}

const servers: http.Server[] = []
const transports: HttpTransport[] = []

afterEach(async () => {
  await Promise.all(transports.splice(0).map((transport) => transport.close()))
  await Promise.all(
    servers.splice(0).map(
      (server) =>
        new Promise<void>((resolve) => {
          server.closeAllConnections()
          server.close(() => resolve())
        }),
    ),
  )
})

type Handler = (req: http.IncomingMessage, res: http.ServerResponse, server: TestServer) => void

async function startServer(handler: Handler, host = '127.0.0.1'): Promise<TestServer> {
  const server = http.createServer()
  servers.push(server)
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, host, () => resolve())
  })
  const { port } = server.address() as AddressInfo
  const state: TestServer = {
    port,
    url: `http://${host}:${port}`,
    requests: [],
    sockets: new Set(),
    connections: 0,
  }
  server.on('connection', (socket) => {
    state.connections++
    state.sockets.add(socket)
  })
  server.on('request', (req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8')
      state.requests.push({
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body,
      })
      handler(req, res, state)
    })
  })
  return state
}

const ok: Handler = (_req, res) => res.end('ok')

/** A resolver that never touches real DNS: names map to fixed answers, anything else fails. */
function fakeLookup(
  resolve: (hostname: string) => readonly string[] | undefined,
): typeof dns.lookup {
  const lookup = (
    hostname: string,
    options: dns.LookupOptions,
    callback: (
      err: NodeJS.ErrnoException | null,
      address: string | dns.LookupAddress[],
      family?: number,
    ) => void,
  ) => {
    const answer = resolve(hostname)
    process.nextTick(() => {
      if (answer === undefined) {
        callback(
          Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }),
          '',
        )
        return
      }
      const addresses = answer.map((address) => ({ address, family: isIP(address) }))
      const first = addresses[0]
      if (options.all || first === undefined) callback(null, addresses)
      else callback(null, first.address, first.family)
    })
  }
  return lookup as unknown as typeof dns.lookup
}

function transport(
  allow: readonly string[],
  options: Partial<HttpTransportOptions> = {},
): HttpTransport {
  const created = createHttpTransport({
    policy: createEgressPolicy({ allow }),
    lookup: fakeLookup(() => undefined),
    ...options,
  })
  transports.push(created)
  return created
}

const BODY = JSON.stringify({ type: 'invoice.paid', data: { id: 'inv_1' } })
const post = (t: HttpTransport, url: string, headers: Record<string, string> = {}) =>
  t.post({ url, headers: { 'webhook-id': 'msg_1', ...headers }, body: BODY })

const LOOPBACK = ['127.0.0.0/8']

describe('HttpTransport', () => {
  it('delivers a POST and keeps only the first 4 KiB of a 2xx body', async () => {
    const server = await startServer((_req, res) => res.writeHead(201).end('x'.repeat(10_000)))
    const result = await post(transport(LOOPBACK), `${server.url}/hooks?a=1`, { 'X-Extra': 'yes' })

    expect(result).toMatchObject({
      kind: 'response',
      status: 201,
      retryAfter: null,
      address: '127.0.0.1',
    })
    if (result.kind !== 'response') throw new Error('unreachable')
    expect(result.bodyExcerpt).toBe('x'.repeat(4096))
    const [received] = server.requests
    expect(received).toMatchObject({ method: 'POST', url: '/hooks?a=1', body: BODY })
    expect(received?.headers).toMatchObject({
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(BODY)),
      'user-agent': 'hookledger/0.1',
      'webhook-id': 'msg_1',
      'x-extra': 'yes',
    })
  })

  it('keeps a given content-type and never cuts a UTF-8 character in half', async () => {
    const server = await startServer((_req, res) => res.end('é'.repeat(3000))) // 2 bytes each
    const result = await post(transport(LOOPBACK), server.url, {
      'Content-Type': 'application/cloudevents+json',
    })

    expect(server.requests[0]?.headers['content-type']).toBe('application/cloudevents+json')
    if (result.kind !== 'response') throw new Error(`unexpected ${result.kind}`)
    expect(result.bodyExcerpt).toBe('é'.repeat(2048))
  })

  it('reuses one keep-alive connection for sequential requests', async () => {
    const server = await startServer(ok)
    const t = transport(LOOPBACK)
    expect(await post(t, server.url)).toMatchObject({ kind: 'response', status: 200 })
    expect(await post(t, server.url)).toMatchObject({ kind: 'response', status: 200 })
    expect(server.requests).toHaveLength(2)
    expect(server.connections).toBe(1)
  })

  it('passes retry-after through', async () => {
    const server = await startServer((_req, res) =>
      res.writeHead(503, { 'retry-after': '120' }).end(),
    )
    expect(await post(transport(LOOPBACK), server.url)).toMatchObject({
      kind: 'response',
      status: 503,
      retryAfter: '120',
    })
  })

  it('refuses a loopback literal without an allow-list, before connecting', async () => {
    const server = await startServer(ok)
    const result = await post(transport([]), `${server.url}/x`)

    expect(result).toMatchObject({
      kind: 'egress_blocked',
      address: '127.0.0.1',
      url: `${server.url}/x`,
      error: 'loopback',
    })
    expect(server.connections).toBe(0)
  })

  it('normalises numeric hosts before checking them', async () => {
    const server = await startServer(ok)
    for (const host of ['2130706433', '0x7f.1', '127.1']) {
      const result = await post(transport([]), `http://${host}:${server.port}/`)
      expect(result).toMatchObject({ kind: 'egress_blocked', address: '127.0.0.1' })
    }
    expect(server.connections).toBe(0)
    const delivered = await post(transport(LOOPBACK), `http://0x7f.1:${server.port}/`)
    expect(delivered).toMatchObject({ kind: 'response', status: 200 })
  })

  it('checks the address a name resolves to, at connect time', async () => {
    const server = await startServer(ok)
    const lookup = fakeLookup((name) => (name === 'hooks.test' ? ['127.0.0.1'] : undefined))
    const url = `http://hooks.test:${server.port}/in`

    expect(await post(transport([], { lookup }), url)).toMatchObject({
      kind: 'egress_blocked',
      address: '127.0.0.1',
      url,
      error: 'loopback',
    })
    expect(server.connections).toBe(0)

    expect(await post(transport(['127.0.0.1/32'], { lookup }), url)).toMatchObject({
      kind: 'response',
      status: 200,
      address: '127.0.0.1',
    })
    expect(server.requests[0]?.headers.host).toBe(`hooks.test:${server.port}`)
  })

  it('guards https connections the same way', async () => {
    const server = await startServer(ok) // plain http: the guard must refuse before any TLS
    const lookup = fakeLookup((name) => (name === 'secure.test' ? ['127.0.0.1'] : undefined))
    const url = `https://secure.test:${server.port}/`

    expect(await post(transport([], { lookup }), url)).toMatchObject({
      kind: 'egress_blocked',
      address: '127.0.0.1',
    })
    expect(await post(transport([]), `https://[::1]:${server.port}/`)).toMatchObject({
      kind: 'egress_blocked',
      address: '::1',
    })
    expect(server.connections).toBe(0)
  })

  it('refuses a name when any of its answers is blocked', async () => {
    const server = await startServer(ok)
    const lookup = fakeLookup((name) =>
      name === 'mixed.test' ? ['127.0.0.1', '10.0.0.1'] : undefined,
    )
    const result = await post(transport(LOOPBACK, { lookup }), `http://mixed.test:${server.port}/`)

    expect(result).toMatchObject({ kind: 'egress_blocked', address: '10.0.0.1', error: 'private' })
    expect(server.connections).toBe(0)
  })

  it('re-checks every new connection, so a rebinding answer is refused', async () => {
    // `connection: close` forces a fresh connect (and lookup) for the second POST.
    const server = await startServer((_req, res) => res.setHeader('connection', 'close').end('ok'))
    let calls = 0
    const lookup = fakeLookup((name) => {
      if (name !== 'rebind.test') return undefined
      calls++
      return calls === 1 ? ['127.0.0.1'] : ['127.0.0.2']
    })
    const t = transport(['127.0.0.1/32'], { lookup })
    const url = `http://rebind.test:${server.port}/`

    expect(await post(t, url)).toMatchObject({ kind: 'response', status: 200 })
    expect(await post(t, url)).toMatchObject({ kind: 'egress_blocked', address: '127.0.0.2' })
    expect(server.connections).toBe(1)
  })

  describe('redirects', () => {
    const redirectTo =
      (location: (server: TestServer) => string, status = 307): Handler =>
      (_req, res, server) =>
        res.writeHead(status, { location: location(server) }).end()

    it.each([
      ['another host', (s: TestServer) => `http://127.0.0.2:${s.port}/next`],
      ['another port', (s: TestServer) => `http://127.0.0.1:${s.port + 1}/next`],
      ['another scheme', (s: TestServer) => `https://127.0.0.1:${s.port}/next`],
      ['a name for the same address', (s: TestServer) => `http://localhost:${s.port}/next`],
      ['a blocked private literal', () => 'http://[::ffff:10.0.0.1]/meta'],
    ])('does not follow a redirect to %s with the signed headers: the 3xx is the outcome, the target gets nothing', async (_what, location) => {
      const target = await startServer(ok, '127.0.0.2')
      const origin = await startServer(redirectTo(location))
      const result = await post(transport(['127.0.0.0/8']), origin.url)
      expect(result).toMatchObject({ kind: 'response', status: 307, redirectRefused: { reason: 'cross_origin' } })
      expect((result as { redirectRefused: { location: string } }).redirectRefused.location).toBe(new URL(location(origin)).href)
      expect(origin.requests).toHaveLength(1)
      expect(target.connections).toBe(0)
    })

    it.each([301, 302, 303, 307, 308])('re-POSTs the same body after a %i', async (status) => {
      const server = await startServer((req, res) =>
        req.url === '/start' ? res.writeHead(status, { location: '/end' }).end() : res.end('done'),
      )
      const result = await post(transport(LOOPBACK), `${server.url}/start`)

      expect(result).toMatchObject({ kind: 'response', status: 200, bodyExcerpt: 'done' })
      expect(server.requests.map((r) => [r.method, r.url, r.body])).toEqual([
        ['POST', '/start', BODY],
        ['POST', '/end', BODY],
      ])
      expect(server.requests[1]?.headers['webhook-id']).toBe('msg_1')
    })

    const chain =
      (hops: number): Handler =>
      (req, res) => {
        const n = Number(req.url?.slice(1) ?? 0)
        if (n < hops) res.writeHead(302, { location: `/${n + 1}` }).end()
        else res.end(`after ${n}`)
      }

    it('follows a chain of 5 redirects', async () => {
      const server = await startServer(chain(5))
      const result = await post(transport(LOOPBACK), `${server.url}/0`)

      expect(result).toMatchObject({ kind: 'response', status: 200, bodyExcerpt: 'after 5' })
      expect(server.requests).toHaveLength(6)
      expect(server.connections).toBe(1)
    })

    it('gives up on a chain of 6 redirects', async () => {
      const server = await startServer(chain(6))
      const result = await post(transport(LOOPBACK), `${server.url}/0`)

      expect(result).toMatchObject({ kind: 'too_many_redirects' })
      expect(server.requests).toHaveLength(6) // the 7th request is never sent
    })

    it('returns a 3xx without a usable location as the response', async () => {
      const server = await startServer((req, res) =>
        req.url === '/none'
          ? res.writeHead(302).end()
          : res.writeHead(301, { location: 'mailto:x@y.z' }).end(),
      )
      const t = transport(LOOPBACK)
      expect(await post(t, `${server.url}/none`)).toMatchObject({ kind: 'response', status: 302 })
      expect(await post(t, `${server.url}/mailto`)).toMatchObject({ kind: 'response', status: 301 })
    })
  })

  it('times out when the server never answers', async () => {
    const server = await startServer(() => {})
    const started = Date.now()
    const result = await post(transport(LOOPBACK, { timeoutMs: 200 }), server.url)

    expect(result).toMatchObject({ kind: 'timeout' })
    expect(result.durationMs).toBeGreaterThanOrEqual(150)
    expect(Date.now() - started).toBeLessThan(1500)
  })

  it("aborts the request on the caller's signal (the job timeout): the receiver sees it closed, never answers it", async () => {
    let closedBeforeAnswer = false
    const server = await startServer((req, res) => {
      req.socket.once('close', () => (closedBeforeAnswer = !res.writableEnded))
      setTimeout(() => res.writableEnded || res.destroyed || res.end('late'), 3_000).unref()
    })
    const job = new AbortController()
    setTimeout(() => job.abort(), 150)
    const started = Date.now()
    const t = transport(LOOPBACK, { timeoutMs: 10_000 })
    const result = await t.post({ url: server.url, headers: { 'content-type': 'application/json' }, body: '{}', signal: job.signal })
    expect(result).toMatchObject({ kind: 'timeout', error: 'job timeout: the request was aborted' })
    expect(Date.now() - started).toBeLessThan(1_500)
    await eventually('the receiver to see the request closed', () => closedBeforeAnswer, { timeoutMs: 2_000, everyMs: 10 })
    expect(closedBeforeAnswer).toBe(true)
  })

  it('counts the body read against the same deadline', async () => {
    const server = await startServer((_req, res) => {
      res.writeHead(200)
      res.write('partial') // ...and never ends
    })
    const result = await post(transport(LOOPBACK, { timeoutMs: 200 }), server.url)
    expect(result).toMatchObject({ kind: 'timeout' })
  })

  it('reads a 1 MiB body only up to the cap, without failing', async () => {
    const server = await startServer((_req, res) => res.end(Buffer.alloc(1024 * 1024, 'z')))
    const result = await post(transport(LOOPBACK), server.url)

    expect(result).toMatchObject({ kind: 'response', status: 200, bodyExcerpt: 'z'.repeat(4096) })
  })

  it('reports a refused connection', async () => {
    const server = await startServer(ok)
    const port = server.port
    await new Promise<void>((resolve) => servers.splice(0).forEach((s) => s.close(() => resolve())))

    const result = await post(transport(LOOPBACK), `http://127.0.0.1:${port}/`)
    expect(result).toMatchObject({ kind: 'connection_error', error: 'ECONNREFUSED' })
  })

  it('reports a name that does not resolve', async () => {
    const result = await post(transport(LOOPBACK), 'http://nowhere.test/')
    expect(result).toMatchObject({ kind: 'connection_error', error: 'ENOTFOUND' })
  })

  it('throws only for programmer errors', async () => {
    const t = transport(LOOPBACK)
    await expect(post(t, 'ftp://example.com/')).rejects.toThrow(TypeError)
    await t.close()
    await expect(post(t, 'http://127.0.0.1/')).rejects.toThrow(/after close/)
  })
})
