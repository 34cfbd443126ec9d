import { describe, expect, it } from 'vitest'
import { ECHOED_SECRET_MASK, withoutEchoedSecrets } from './endpoint-headers.js'

const M = ECHOED_SECRET_MASK

describe('withoutEchoedSecrets: a receiver echoing a secret header back keeps it out of the ledger', () => {
  it.each<[string, { response_excerpt?: string; response_headers?: Record<string, string> }, string[], object]>([
    ['the body echoes it', { response_excerpt: '{"x-api-key":"k3y-s3cret"}' }, ['k3y-s3cret'], { response_excerpt: `{"x-api-key":"${M}"}` }],
    ['a header echoes it', { response_headers: { 'x-echo': 'Bearer k3y-s3cret' } }, ['k3y-s3cret'], { response_headers: { 'x-echo': `Bearer ${M}` } }],
    ['several times, two secrets, the longer first', { response_excerpt: 'abcdefgh abcd abcdefgh' }, ['abcd', 'abcdefgh'], { response_excerpt: `${M} ${M} ${M}` }],
    ['nothing echoed', { response_excerpt: 'ok' }, ['k3y-s3cret'], { response_excerpt: 'ok' }],
    ['no secret headers', { response_excerpt: 'k3y-s3cret' }, [], { response_excerpt: 'k3y-s3cret' }],
    ['a value under 4 characters is not searched for', { response_excerpt: 'abc' }, ['abc'], { response_excerpt: 'abc' }],
  ])('%s', (_name, facts, secrets, expected) => {
    expect(withoutEchoedSecrets(facts, secrets)).toEqual(expected)
  })

  it('keeps the other facts as they are', () => {
    const facts = { started_at: new Date(0), status_code: 200, response_excerpt: 'k3y-s3cret' }
    expect(withoutEchoedSecrets(facts, ['k3y-s3cret'])).toEqual({ started_at: new Date(0), status_code: 200, response_excerpt: M })
  })
})
