import { Writable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { scrubLogValue } from './log-scrub.js'
import { createLogger } from './service.js'

describe('no credential reaches a log line', () => {
  it.each([
    ['https://user:pw@hooks.example/in', 'https://***@hooks.example/in'],
    ['http://pw-only@127.0.0.1:9/x', 'http://***@127.0.0.1:9/x'],
    ['see https://a:b@x.example and ftp://c:d@y.example/', 'see https://***@x.example and ftp://***@y.example/'],
    ['https://hooks.example/in?email=a@b.example', 'https://hooks.example/in?email=a@b.example'],
    ['owner@example.com', 'owner@example.com'],
  ])('%s → %s', (input, output) => {
    expect(scrubLogValue(input)).toBe(output)
  })

  it('a URL password in a debug line, at any depth, is gone from what the logger writes', () => {
    const lines: string[] = []
    const sink = new Writable({ write: (chunk, _enc, done) => (lines.push(String(chunk)), done()) })
    const log = createLogger({ LOG_LEVEL: 'debug' }, sink)
    log.debug({ op: 'webhooks.create', input: { url: 'https://user:s3cr3t-pw@hooks.example/in', nested: [{ url: 'http://x:y@z.example' }] } }, 'api:input')
    expect(lines.join('')).not.toContain('s3cr3t-pw')
    expect(lines.join('')).not.toContain('x:y@')
    expect(lines.join('')).toContain('https://***@hooks.example/in')
  })

  it('an endpoint private key, client secret or access token passed to the process logger is redacted', () => {
    const lines: string[] = []
    const sink = new Writable({ write: (chunk, _enc, done) => (lines.push(String(chunk)), done()) })
    const log = createLogger({ LOG_LEVEL: 'debug' }, sink)
    log.debug({ op: 'webhooks.create', input: { mtls: { certificate: 'PEM', private_key: 'pk-0f9e8d' }, oauth2: { client_id: 'c', client_secret: 'cs-7a6b5c' } } }, 'api:input')
    log.info({ access_token: 'at-4d3c2b', oauth2: { client_secret: 'cs-1a2b3c' } }, 'x')
    const text = lines.join('')
    for (const secret of ['pk-0f9e8d', 'cs-7a6b5c', 'at-4d3c2b', 'cs-1a2b3c']) expect(text).not.toContain(secret)
    expect(text).toContain('"client_id":"c"')
  })
})
