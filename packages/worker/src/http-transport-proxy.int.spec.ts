import { execFileSync } from 'node:child_process'
import type * as dns from 'node:dns'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import * as https from 'node:https'
import * as net from 'node:net'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import {
  createEgressPolicy,
  generateWebhookSecret,
  parseEgressProxy,
  signWebhook,
  type HttpTransport,
} from '@hookledger/core'
import { ConnectProxy, TestReceiver, engineHarness } from '@hookledger/testkit'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createHttpTransport, type HttpTransportOptions } from './http-transport.js'

// The receiver listens on 127.0.0.1, the proxy on 127.0.0.3: the policy admits only the
// receiver's address, so a delivery that works shows the proxy's own address was not put to it.
const PROXY_HOST = '127.0.0.3'
const RECEIVER_ONLY = ['127.0.0.1/32']

const closing: Array<{ close(): Promise<void> }> = []
afterEach(async () => {
  await Promise.all(closing.splice(0).map((c) => c.close()))
})

/** A resolver that never touches real DNS: names map to fixed answers, anything else fails. */
function fakeLookup(names: Record<string, string>): typeof dns.lookup {
  const lookup = (
    hostname: string,
    options: dns.LookupOptions,
    callback: (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void,
  ) => {
    process.nextTick(() => {
      const address = names[hostname]
      if (address === undefined) {
        callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), '')
      } else if (options.all) callback(null, [{ address, family: 4 }])
      else callback(null, address, 4)
    })
  }
  return lookup as unknown as typeof dns.lookup
}

async function started<T extends { close(): Promise<void> }>(thing: Promise<T>): Promise<T> {
  const value = await thing
  closing.push(value)
  return value
}

function transport(proxyUrl: string, options: Partial<HttpTransportOptions> = {}): HttpTransport {
  const created = createHttpTransport({
    policy: createEgressPolicy({ allow: RECEIVER_ONLY }),
    proxy: parseEgressProxy(proxyUrl),
    lookup: fakeLookup({ 'receiver.test': '127.0.0.1', 'internal.test': '10.0.0.7' }),
    timeoutMs: 5_000,
    ...options,
  })
  closing.push(created)
  return created
}

function signed(body: string) {
  const secret = generateWebhookSecret()
  return signWebhook({ id: 'evt_proxy_1', timestamp: 1_800_000_000, body, secrets: [secret] }).headers
}

describe('the transport through an egress proxy (HOOKLEDGER_EGRESS_PROXY)', () => {
  it('tunnels an http delivery with CONNECT to the checked address; the receiver gets the signed request', async () => {
    const proxy = await started(new ConnectProxy().start(PROXY_HOST))
    const receiver = await started(new TestReceiver({ status: 204 }).start())
    const post = transport(proxy.url)
    const body = '{"type":"booking.created"}'
    const headers = signed(body)

    const url = `http://receiver.test:${receiver.port}/hook`
    const first = await post.post({ url, headers: { ...headers }, body })
    const second = await post.post({ url, headers: { ...headers }, body })

    expect(first).toMatchObject({ kind: 'response', status: 204, address: '127.0.0.1' })
    expect(second).toMatchObject({ kind: 'response', status: 204 })
    // The proxy is asked for the IP the guard checked, never the name (it resolves nothing),
    // and once: the second attempt reuses the pooled tunnel.
    expect(proxy.seen).toEqual([{ method: 'CONNECT', target: `127.0.0.1:${receiver.port}`, authorization: null }])
    expect(receiver.requests).toHaveLength(2)
    const got = receiver.requests[0]
    expect(got).toMatchObject({ method: 'POST', path: '/hook', body })
    expect(got?.headers['host']).toBe(`receiver.test:${receiver.port}`)
    expect(got?.headers['webhook-id']).toBe(headers['webhook-id'])
    expect(got?.headers['webhook-signature']).toBe(headers['webhook-signature'])
  })

  it('sends the credentials to the proxy as Proxy-Authorization, and only there', async () => {
    const proxy = await started(new ConnectProxy().start(PROXY_HOST))
    const receiver = await started(new TestReceiver({ status: 200 }).start())
    const post = transport(`http://alice:s3cret@${PROXY_HOST}:${proxy.port}`)

    const result = await post.post({ url: `http://receiver.test:${receiver.port}/`, headers: {}, body: '{}' })

    expect(result).toMatchObject({ kind: 'response', status: 200 })
    expect(proxy.seen[0]?.authorization).toBe(`Basic ${Buffer.from('alice:s3cret').toString('base64')}`)
    expect(receiver.requests[0]?.headers['proxy-authorization']).toBeUndefined()
  })

  it.each([
    ['a name resolving to a private address', 'http://internal.test/hook', '10.0.0.7'],
    ['a private IP literal', 'http://10.0.0.8/hook', '10.0.0.8'],
    ['loopback outside the allow-list', 'http://127.0.0.2:9/hook', '127.0.0.2'],
  ])('refuses %s before the proxy is asked', async (_name, url, address) => {
    const proxy = await started(new ConnectProxy().start(PROXY_HOST))
    const post = transport(proxy.url)

    const result = await post.post({ url, headers: {}, body: '{}' })

    expect(result).toMatchObject({ kind: 'egress_blocked', address })
    expect(proxy.seen).toEqual([])
  })

  it.each([403, 407, 502])('a proxy answering CONNECT with %i is a connection_error naming the proxy', async (status) => {
    const proxy = await started(new ConnectProxy().start(PROXY_HOST))
    proxy.refuse = status
    const receiver = await started(new TestReceiver({ status: 204 }).start())
    const post = transport(`http://alice:s3cret@${PROXY_HOST}:${proxy.port}`)

    const result = await post.post({ url: `http://receiver.test:${receiver.port}/`, headers: {}, body: '{}' })

    expect(result.kind).toBe('connection_error')
    const error = result.kind === 'connection_error' ? result.error : ''
    expect(error).toMatch(new RegExp(`^proxy ${PROXY_HOST}:${proxy.port} refused CONNECT 127\\.0\\.0\\.1:${receiver.port}: ${status} `))
    expect(error).not.toContain('s3cret')
    expect(error).not.toContain('alice')
    expect(receiver.requests).toHaveLength(0)
  })

  it('a proxy that is down is a connection_error naming it', async () => {
    const proxy = await new ConnectProxy().start(PROXY_HOST)
    await proxy.close()
    const post = transport(proxy.url)

    const result = await post.post({ url: 'http://receiver.test:9/', headers: {}, body: '{}' })

    expect(result).toMatchObject({ kind: 'connection_error', error: `proxy ${PROXY_HOST}:${proxy.port} unreachable: ECONNREFUSED` })
  })

  it('follows a same-origin redirect through the proxy', async () => {
    const proxy = await started(new ConnectProxy().start(PROXY_HOST))
    const receiver = await started(
      new TestReceiver((_req, index) => (index === 0 ? { status: 307, headers: { location: '/moved' } } : { status: 204 })).start(),
    )
    const post = transport(proxy.url)

    const result = await post.post({ url: `http://receiver.test:${receiver.port}/hook`, headers: {}, body: '{}' })

    expect(result).toMatchObject({ kind: 'response', status: 204 })
    expect(receiver.requests.map((r) => r.path)).toEqual(['/hook', '/moved'])
    expect(proxy.seen.every((s) => s.target === `127.0.0.1:${receiver.port}`)).toBe(true)
  })

  it('a proxy that never answers CONNECT is a timeout at the request deadline', async () => {
    const silent = net.createServer(() => {})
    const sockets = new Set<net.Socket>()
    silent.on('connection', (socket) => sockets.add(socket))
    await new Promise<void>((resolve) => silent.listen(0, PROXY_HOST, resolve))
    closing.push({ close: () => new Promise<void>((resolve) => (sockets.forEach((s) => s.destroy()), silent.close(() => resolve()))) })
    const post = transport(`http://${PROXY_HOST}:${(silent.address() as AddressInfo).port}`, { timeoutMs: 200 })

    const result = await post.post({ url: 'http://receiver.test:9/', headers: {}, body: '{}' })

    expect(result).toMatchObject({ kind: 'timeout', error: 'timed out after 200 ms' })
  })

  describe('https targets', () => {
    let dir = ''
    const tls: Record<'key' | 'cert', Buffer> = { key: Buffer.alloc(0), cert: Buffer.alloc(0) }
    beforeAll(() => {
      // node:crypto makes no X.509; openssl does, in milliseconds.
      dir = mkdtempSync(path.join(tmpdir(), 'hookledger-proxy-tls-'))
      execFileSync('openssl', [
        'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
        '-subj', '/CN=receiver.test', '-addext', 'subjectAltName=DNS:receiver.test',
        '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem'),
      ], { stdio: 'ignore' })
      tls.key = readFileSync(path.join(dir, 'key.pem'))
      tls.cert = readFileSync(path.join(dir, 'cert.pem'))
    })
    afterAll(() => rmSync(dir, { recursive: true, force: true }))

    async function httpsReceiver(): Promise<{ port: number; hosts: string[]; close(): Promise<void> }> {
      const hosts: string[] = []
      const server = https.createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
        hosts.push(req.headers.host ?? '')
        req.resume().on('end', () => res.writeHead(200).end('ok'))
      })
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      return started(Promise.resolve({
        port: (server.address() as AddressInfo).port,
        hosts,
        close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
      }))
    }

    it('tunnels to the checked IP and checks the certificate against the URL host', async () => {
      const proxy = await started(new ConnectProxy().start(PROXY_HOST))
      const receiver = await httpsReceiver()
      const post = transport(proxy.url, { ca: tls.cert })

      const result = await post.post({ url: `https://receiver.test:${receiver.port}/hook`, headers: {}, body: '{}' })

      expect(result).toMatchObject({ kind: 'response', status: 200, address: '127.0.0.1' })
      expect(proxy.seen).toEqual([{ method: 'CONNECT', target: `127.0.0.1:${receiver.port}`, authorization: null }])
      expect(receiver.hosts).toEqual([`receiver.test:${receiver.port}`])
    })

    it('refuses a certificate for another name', async () => {
      const proxy = await started(new ConnectProxy().start(PROXY_HOST))
      const receiver = await httpsReceiver()
      const post = transport(proxy.url, {
        ca: tls.cert,
        lookup: fakeLookup({ 'other.test': '127.0.0.1' }),
      })

      const result = await post.post({ url: `https://other.test:${receiver.port}/hook`, headers: {}, body: '{}' })

      expect(result).toMatchObject({ kind: 'connection_error', error: 'ERR_TLS_CERT_ALTNAME_INVALID' })
      expect(receiver.hosts).toEqual([])
    })
  })
})

describe('the delivery engine through an egress proxy', () => {
  it('delivers through the tunnel and records the attempt with the target, not the proxy; the ledger replays clean', async () => {
    const proxy = await started(new ConnectProxy().start(PROXY_HOST))
    const h = await engineHarness({ proxy: parseEgressProxy(proxy.url) })
    closing.push(h)
    const { endpoint } = await h.createEndpoint()
    await h.publish({ id: 'evt_via_proxy' })
    await h.step()
    expect(h.receiver.requests.map((r) => r.headers['webhook-id'])).toEqual(['evt_via_proxy'])
    expect(proxy.seen).toEqual([{ method: 'CONNECT', target: `127.0.0.1:${h.receiver.port}`, authorization: null }])
    expect(await h.deliveryOf('evt_via_proxy')).toMatchObject({ endpoint_id: endpoint.id, state: 'completed' })
    const [attempt] = (await h.ledgerOf('endpoint_id', endpoint.id)).filter((e) => e.kind === 'delivery.attempted')
    expect(attempt?.payload).toMatchObject({ status_code: 204, address: '127.0.0.1' })
    expect((await h.replay()).differences).toEqual([])
  })
})
