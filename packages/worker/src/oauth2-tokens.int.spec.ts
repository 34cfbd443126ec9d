/**
 * The OAuth2 token fetch through the real transport: it takes the same path as the endpoint's
 * requests — the egress guard and the operator's CONNECT proxy — against a real local token
 * server, and its cache runs on the clock it is given.
 */
import { createServer, type Server } from 'node:http'
import type * as dns from 'node:dns'
import { bytesToBase64, createEgressPolicy, createSecretBox, generateMasterKey, parseEgressProxy, type EndpointOauth2 } from '@hookledger/core'
import { ConnectProxy } from '@hookledger/testkit'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createHttpTransport } from './http-transport.js'
import { Oauth2Tokens } from './oauth2-tokens.js'

const box = createSecretBox(generateMasterKey())
let server: Server
let port = 0
let asked = 0
const closing: Array<() => Promise<void>> = []
beforeEach(async () => {
  asked = 0
  server = createServer((req, res) => {
    asked++
    req.resume().on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ access_token: `tok-${asked}`, expires_in: 120 })))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  port = (server.address() as { port: number }).port
  closing.push(() => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))))
})
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close()
})

/** Names map to fixed answers (no real DNS). */
const lookup = ((hostname: string, options: dns.LookupOptions, callback: (e: Error | null, a: string | dns.LookupAddress[], f?: number) => void) => {
  const address = ({ 'tokens.test': '127.0.0.1', 'internal.test': '10.0.0.7' } as Record<string, string>)[hostname]
  process.nextTick(() => (address === undefined ? callback(Object.assign(new Error('ENOTFOUND'), { code: 'ENOTFOUND' }), '') : options.all ? callback(null, [{ address, family: 4 }]) : callback(null, address, 4)))
}) as unknown as typeof dns.lookup

const endpoint = (tokenUrl: string) => ({
  id: '7d3c8f7e-0000-4000-8000-000000000001',
  oauth2: { token_url: tokenUrl, client_id: 'c', client_secret_sealed: bytesToBase64(box.seal('s')), scope: null, audience: null } satisfies EndpointOauth2,
})

describe('Oauth2Tokens', () => {
  it('fetches through the CONNECT proxy to the checked address; caches on the given clock', async () => {
    const proxy = await new ConnectProxy().start('127.0.0.3')
    closing.push(() => proxy.close())
    const transport = createHttpTransport({ policy: createEgressPolicy({ allow: ['127.0.0.1/32'] }), proxy: parseEgressProxy(proxy.url), lookup, timeoutMs: 5_000 })
    closing.push(() => transport.close())
    const tokens = new Oauth2Tokens(transport, box)
    const e = endpoint(`http://tokens.test:${port}/token`)
    const t0 = new Date('2026-01-01T00:00:00Z')

    expect(await tokens.token(e, t0)).toEqual({ ok: true, access_token: 'tok-1' })
    expect(proxy.seen).toEqual([{ method: 'CONNECT', target: `127.0.0.1:${port}`, authorization: null }])
    expect(await tokens.token(e, new Date(t0.getTime() + 89_999))).toEqual({ ok: true, access_token: 'tok-1' })
    expect(await tokens.token(e, new Date(t0.getTime() + 90_000))).toEqual({ ok: true, access_token: 'tok-2' })
    // A changed configuration (another client) never reuses the token.
    expect(await tokens.token({ ...e, oauth2: { ...e.oauth2, client_id: 'd' } }, t0)).toEqual({ ok: true, access_token: 'tok-3' })
    // Concurrent asks share one fetch.
    tokens.forget(e.id)
    const both = await Promise.all([tokens.token(e, t0), tokens.token(e, t0)])
    expect(both).toEqual([{ ok: true, access_token: 'tok-4' }, { ok: true, access_token: 'tok-4' }])
    expect(asked).toBe(4)
  })

  it('a token URL the egress guard refuses at connect time is a token failure naming it; nothing is asked', async () => {
    const transport = createHttpTransport({ policy: createEgressPolicy({ allow: ['127.0.0.1/32'] }), lookup, timeoutMs: 5_000 })
    closing.push(() => transport.close())
    const tokens = new Oauth2Tokens(transport, box)
    const url = `http://internal.test:${port}/token`

    const r = await tokens.token(endpoint(url), new Date())

    expect(r).toEqual({ ok: false, error: expect.stringMatching(new RegExp(`^oauth2_token_failed: egress_blocked 10\\.0\\.0\\.7 \\(.+\\) from ${url.replaceAll('.', '\\.')}$`)) })
    expect(asked).toBe(0)
  })
})
