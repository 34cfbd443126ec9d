/** OAuth2 client credentials as pure rules: the token request, reading the answer, the cache's use-until. */
import { describe, expect, it } from 'vitest'
import { OAUTH2_DEFAULT_LIFETIME_MS, OAUTH2_MAX_LIFETIME_MS, oauth2TokenRequest, oauth2TokenUsable, readOauth2TokenAnswer } from './oauth2-token.js'

const now = new Date('2026-01-01T00:00:00Z')
const at = (ms: number) => new Date(now.getTime() + ms)

describe('oauth2TokenRequest', () => {
  it('is a form POST with grant_type=client_credentials and client_secret_basic (each part form-encoded first)', () => {
    const r = oauth2TokenRequest({ client_id: 'svc:a b', scope: 'read write', audience: 'https://api.example' }, 'p@ss:wörd')
    expect(r.headers).toEqual({
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
      authorization: `Basic ${Buffer.from('svc%3Aa+b:p%40ss%3Aw%C3%B6rd').toString('base64')}`,
    })
    expect(Object.fromEntries(new URLSearchParams(r.body))).toEqual({ grant_type: 'client_credentials', scope: 'read write', audience: 'https://api.example' })
    // The secret travels only in the basic header, never in the body.
    expect(r.body).not.toContain('p%40ss')
  })

  it('leaves out a null scope and audience', () => {
    expect(oauth2TokenRequest({ client_id: 'a', scope: null, audience: null }, 's').body).toBe('grant_type=client_credentials')
  })
})

describe('readOauth2TokenAnswer', () => {
  const ok = (body: unknown, status = 200) => readOauth2TokenAnswer(status, JSON.stringify(body), false, now)
  it.each<[string, ReturnType<typeof readOauth2TokenAnswer>, Date | null]>([
    ['3600 s: used until 30 s before expiry', ok({ access_token: 't', token_type: 'Bearer', expires_in: 3600 }), at(3_570_000)],
    ['token_type in any case', ok({ access_token: 't', token_type: 'bearer', expires_in: 3600 }), at(3_570_000)],
    ['40 s: the margin is half the life', ok({ access_token: 't', expires_in: 40 }), at(20_000)],
    ['no expires_in: the default lifetime less the margin', ok({ access_token: 't' }), at(OAUTH2_DEFAULT_LIFETIME_MS - 30_000)],
    ['a non-numeric expires_in: the default', ok({ access_token: 't', expires_in: '3600' }), at(OAUTH2_DEFAULT_LIFETIME_MS - 30_000)],
    ['a huge expires_in: at most a day', ok({ access_token: 't', expires_in: 1e13 }), at(OAUTH2_MAX_LIFETIME_MS - 30_000)],
  ])('%s', (_what, answer, useUntil) => {
    expect(answer).toEqual({ ok: true, token: { access_token: 't', use_until: useUntil } })
  })

  it.each<[string, ReturnType<typeof readOauth2TokenAnswer>, string]>([
    ['a 400 with an OAuth2 error code', ok({ error: 'invalid_client', error_description: 'secret s3cr3t is wrong' }, 400), 'HTTP 400 (invalid_client)'],
    ['a 401 without a body', readOauth2TokenAnswer(401, '', false, now), 'HTTP 401'],
    ['an error that is not a code is not quoted', ok({ error: 'the secret was s3cr3t' }, 400), 'HTTP 400'],
    ['a 200 without access_token', ok({ token_type: 'Bearer' }), 'HTTP 200 without an access_token'],
    ['a 200 that is not JSON', readOauth2TokenAnswer(200, '<html>', false, now), 'HTTP 200 without an access_token'],
    ['a token with a line break (header injection)', ok({ access_token: 'a\r\nx-evil: 1' }), 'HTTP 200 without an access_token'],
    ['another token type', ok({ access_token: 't', token_type: 'mac' }), 'HTTP 200, token_type is not bearer'],
    ['a truncated answer', readOauth2TokenAnswer(200, '{"access_token":"t"', true, now), 'HTTP 200, answer longer than 4 KiB'],
  ])('refuses %s', (_what, answer, reason) => {
    expect(answer).toEqual({ ok: false, reason })
    expect(JSON.stringify(answer)).not.toContain('s3cr3t')
  })
})

describe('oauth2TokenUsable', () => {
  const token = { access_token: 't', use_until: at(1000) }
  it.each([
    [at(0), true],
    [at(999), true],
    [at(1000), false],
    [at(5000), false],
  ])('at %s → %s', (when, usable) => expect(oauth2TokenUsable(token, when)).toBe(usable))
})
