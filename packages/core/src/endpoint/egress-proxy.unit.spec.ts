import { describe, expect, it } from 'vitest'
import { parseEgressProxy } from './egress-proxy.js'

describe('parseEgressProxy', () => {
  const basic = (userPass: string) => `Basic ${Buffer.from(userPass).toString('base64')}`
  it.each([
    ['http://proxy.internal:3128', { host: 'proxy.internal', port: 3128, label: 'proxy.internal:3128', authorization: null }],
    ['http://10.0.0.5', { host: '10.0.0.5', port: 80, label: '10.0.0.5:80', authorization: null }],
    ['http://10.0.0.5:3128/', { host: '10.0.0.5', port: 3128, label: '10.0.0.5:3128', authorization: null }],
    ['http://[fd00::5]:3128', { host: 'fd00::5', port: 3128, label: '[fd00::5]:3128', authorization: null }],
    ['http://alice:s3cret@proxy:3128', { host: 'proxy', port: 3128, label: 'proxy:3128', authorization: basic('alice:s3cret') }],
    ['http://al%40ce:p%3Ass@proxy:3128', { host: 'proxy', port: 3128, label: 'proxy:3128', authorization: basic('al@ce:p:ss') }],
    ['  http://proxy:3128  ', { host: 'proxy', port: 3128, label: 'proxy:3128', authorization: null }],
  ])('%s', (text, expected) => {
    expect(parseEgressProxy(text)).toEqual(expected)
  })

  it.each([
    ['proxy:3128', /scheme must be http, not proxy/],
    ['not a url', /is not a URL/],
    ['https://proxy:3128', /scheme must be http, not https/],
    ['socks5://proxy:1080', /scheme must be http, not socks5/],
    ['http://proxy:3128/path', /no path, query or fragment/],
    ['http://proxy:3128?x=1', /no path, query or fragment/],
    ['http://u:%zz@proxy:3128', /percent-encoded/],
  ])('refuses %s', (text, message) => {
    expect(() => parseEgressProxy(text)).toThrow(message)
  })

  it('never repeats the password in an error', () => {
    expect(() => parseEgressProxy('ftp://alice:s3cret@proxy:21')).toThrow(/^(?!.*s3cret)/)
  })
})
