/**
 * The transport's redirect rule: `same_origin` (the default) follows same-origin hops and never
 * another origin; `none` follows nothing. The rule comes from the request's `followRedirects` (the
 * executor passes the endpoint's) and is never sent. Real receivers on loopback.
 */
import { createEgressPolicy, type FollowRedirects, type HttpTransport } from '@hookledger/core'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { TestReceiver } from '@hookledger/testkit'
import { createHttpTransport } from './http-transport.js'

let receiver: TestReceiver
let other: TestReceiver
let transport: HttpTransport
beforeEach(async () => {
  receiver = await new TestReceiver((req) => (req.path === '/hook' ? { status: 302, headers: { location: '/next' } } : { status: 204 })).start()
  other = await new TestReceiver({ status: 204 }).start()
  transport = createHttpTransport({ policy: createEgressPolicy({ allow: ['127.0.0.0/8'] }), timeoutMs: 2_000 })
})
afterEach(async () => {
  await transport.close()
  await receiver.close()
  await other.close()
})

const post = (headers: Record<string, string>, followRedirects?: FollowRedirects) =>
  transport.post({ url: receiver.url('/hook'), headers, body: '{}', ...(followRedirects && { followRedirects }) })

describe('the redirect rule', () => {
  it.each([
    ['no rule (same_origin)', {}, undefined],
    ['same_origin on the request', {}, 'same_origin'],
  ] as [string, Record<string, string>, FollowRedirects | undefined][])('%s: a same-origin hop is followed', async (_, headers, rule) => {
    const result = await post({ 'x-a': '1', ...headers }, rule)
    expect(result).toMatchObject({ kind: 'response', status: 204 })
    expect(result.kind === 'response' && result.redirectRefused).toBeFalsy()
    expect(receiver.requests.map((r) => r.path)).toEqual(['/hook', '/next'])
    // The same POST with the same headers on every hop.
    expect(receiver.requests.map((r) => r.headers['x-a'])).toEqual(['1', '1'])
  })

  it.each([
    ['none on the request', {}, 'none'],
  ] as [string, Record<string, string>, FollowRedirects | undefined][])('%s: nothing is followed, the 3xx and its Location are the answer', async (_, headers, rule) => {
    const result = await post(headers, rule)
    expect(result).toMatchObject({
      kind: 'response',
      status: 302,
      redirectRefused: { reason: 'not_followed', location: receiver.url('/next') },
    })
    expect(receiver.requests.map((r) => r.path)).toEqual(['/hook'])
  })

  it('with none, a redirect to another origin is not_followed too, and the other origin gets nothing', async () => {
    receiver.answer({ status: 307, headers: { location: other.url('/elsewhere') } })
    const result = await post({}, 'none')
    expect(result).toMatchObject({ kind: 'response', status: 307, redirectRefused: { reason: 'not_followed' } })
    expect(other.requests).toHaveLength(0)
  })

  it('with same_origin, a redirect to another origin stays refused (cross_origin)', async () => {
    receiver.answer({ status: 307, headers: { location: other.url('/elsewhere') } })
    const result = await post({})
    expect(result).toMatchObject({ kind: 'response', status: 307, redirectRefused: { reason: 'cross_origin' } })
    expect(other.requests).toHaveLength(0)
  })

  it('a 3xx without a Location is an answer like any other, whatever the rule', async () => {
    receiver.answer({ status: 302 })
    for (const rule of ['none', 'same_origin'] as const) {
      const result = await post({}, rule)
      expect(result).toMatchObject({ kind: 'response', status: 302 })
      expect(result.kind === 'response' && result.redirectRefused).toBeFalsy()
    }
  })

  it('the rule never travels as a header', async () => {
    receiver.answer({ status: 204 })
    await post({ 'x-a': '1' }, 'none')
    const sent = Object.keys(receiver.requests[0]!.headers)
    expect(sent).toContain('x-a')
    expect(sent.some((name) => /redirect/i.test(name))).toBe(false)
  })
})
