/**
 * mTLS through the real transport to a real https receiver that demands a client certificate
 * of a CA made in this test: presented directly and through the operator's CONNECT proxy, the
 * receiver's CA pinned per request, and the pool never lending one endpoint's socket to another.
 */
import { createEgressPolicy, parseEgressProxy, type HttpTransport } from '@hookledger/core'
import { ConnectProxy, MtlsReceiver, createTestCa, type TestCa } from '@hookledger/testkit'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createHttpTransport, type HttpTransportOptions } from './http-transport.js'

let ca: TestCa
let other: TestCa
beforeAll(() => {
  ca = createTestCa()
  other = createTestCa('another CA')
})
afterAll(() => (ca.dispose(), other.dispose()))

const closing: Array<{ close(): Promise<void> }> = []
afterEach(async () => {
  await Promise.all(closing.splice(0).map((c) => c.close()))
})
const started = async <T extends { close(): Promise<void> }>(thing: Promise<T>): Promise<T> => {
  const value = await thing
  closing.push(value)
  return value
}

function transport(options: Partial<HttpTransportOptions> = {}): HttpTransport {
  const created = createHttpTransport({ policy: createEgressPolicy({ allow: ['127.0.0.1/32'] }), timeoutMs: 5_000, ...options })
  closing.push(created)
  return created
}

const tlsOf = (pair: { certificate: string; private_key: string }, pinned: string) => ({ cert: pair.certificate, key: pair.private_key, ca: pinned })

let proxy: ConnectProxy
describe.each([
  ['directly', () => ({})],
  ['through the CONNECT proxy', () => ({ proxy: parseEgressProxy(`http://127.0.0.3:${proxy.port}`) })],
] as const)('mTLS %s', (how, extra) => {
  beforeAll(async () => {
    proxy = await new ConnectProxy().start('127.0.0.3')
  })
  afterAll(() => proxy.close())

  it('presents the client certificate; the receiver verified it against its CA', async () => {
    const receiver = await started(new MtlsReceiver(ca).start())
    const post = transport(extra())

    const result = await post.post({ url: receiver.url(), headers: {}, body: '{}', tls: tlsOf(ca.client, ca.ca) })

    expect(result).toMatchObject({ kind: 'response', status: 200, address: '127.0.0.1' })
    expect(receiver.requests.map((r) => r.clientCommonName)).toEqual(['hookledger-client'])
    if (how !== 'directly') expect(proxy.seen.at(-1)).toMatchObject({ method: 'CONNECT', target: `127.0.0.1:${receiver.port}` })
  })

  it('without a client certificate the handshake is refused: a connection error, nothing received', async () => {
    const receiver = await started(new MtlsReceiver(ca).start())
    const post = transport(extra())

    const result = await post.post({ url: receiver.url(), headers: {}, body: '{}', tls: { ca: ca.ca } })

    expect(result.kind).toBe('connection_error')
    expect(receiver.requests).toEqual([])
  })

  it("pins the receiver's CA: a server certificate of another CA is refused before anything is sent", async () => {
    const receiver = await started(new MtlsReceiver(ca).start())
    const post = transport(extra())

    const result = await post.post({ url: receiver.url(), headers: {}, body: '{}', tls: tlsOf(ca.client, other.ca) })

    expect(result).toMatchObject({ kind: 'connection_error' })
    expect(receiver.requests).toEqual([])
  })

  it("pools per certificate: a socket opened with one endpoint's certificate is not reused for another's", async () => {
    const receiver = await started(new MtlsReceiver(ca).start())
    const post = transport(extra())
    const second = ca.issue('second-client', 'client')

    for (const pair of [ca.client, second, ca.client]) {
      const result = await post.post({ url: receiver.url(), headers: {}, body: '{}', tls: tlsOf(pair, ca.ca) })
      expect(result).toMatchObject({ kind: 'response', status: 200 })
    }
    // And a request without a certificate does not ride a pooled mTLS socket.
    const bare = await post.post({ url: receiver.url(), headers: {}, body: '{}', tls: { ca: ca.ca } })

    expect(receiver.requests.map((r) => r.clientCommonName)).toEqual(['hookledger-client', 'second-client', 'hookledger-client'])
    expect(bare.kind).toBe('connection_error')
  })
})
