/**
 * The client certificate rule (`checkEndpointMtls`): what parses, what matches, what has expired
 * on the injected clock, the size limit, and what a read shows. Certificates come from a CA made
 * for this file (openssl, as the transport's tests do); no database, no network.
 */
import { createTestCa, type TestCa } from '@hookledger/testkit/test-ca'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MAX_MTLS_PEM_BYTES, certificateSubject, checkEndpointMtls, type EndpointMtlsInput } from './endpoint-mtls.js'

let ca: TestCa
let other: ReturnType<TestCa['issue']>
beforeAll(() => {
  ca = createTestCa()
  other = ca.issue('other-client', 'client')
})
afterAll(() => ca.dispose())

const now = () => new Date()
const day = 24 * 3_600_000

describe('checkEndpointMtls', () => {
  it('accepts a matching pair: keeps the certificate and CA, shows its expiry and SHA-256 fingerprint', () => {
    const r = checkEndpointMtls({ ...ca.client, ca: ca.ca }, now())
    expect(r).toEqual({
      ok: true,
      mtls: {
        certificate: ca.client.certificate,
        ca: ca.ca,
        not_after: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        fingerprint: expect.stringMatching(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/),
      },
    })
    expect(new Date((r as { mtls: { not_after: string } }).mtls.not_after).getTime()).toBeGreaterThan(Date.now())
  })

  it.each<[string, () => EndpointMtlsInput, Date | null, string, RegExp]>([
    ['not a PEM certificate', () => ({ certificate: 'hello', private_key: ca.client.private_key }), null, 'mtls.certificate', /not a PEM certificate/],
    ['a corrupt certificate', () => ({ certificate: ca.client.certificate.replace(/\n[A-Za-z0-9+/]{10}/, '\n!!!!!!!!!!'), private_key: ca.client.private_key }), null, 'mtls.certificate', /not a PEM/],
    ['not a PEM key', () => ({ certificate: ca.client.certificate, private_key: 'hello' }), null, 'mtls.private_key', /not an unencrypted PEM private key/],
    ['an encrypted key', () => ({ certificate: ca.client.certificate, private_key: '-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----' }), null, 'mtls.private_key', /unencrypted/],
    ["another certificate's key", () => ({ certificate: ca.client.certificate, private_key: other.private_key }), null, 'mtls.private_key', /does not match/],
    ['expired on the clock', () => ca.client, new Date(Date.now() + 2 * day), 'mtls.certificate', /^expired at /],
    ['not yet valid on the clock', () => ca.client, new Date(Date.now() - 2 * day), 'mtls.certificate', /not valid before/],
    ['a CA that is not PEM', () => ({ ...ca.client, ca: 'hello' }), null, 'mtls.ca', /not a PEM certificate/],
    ['a certificate over 16 KiB', () => ({ ...ca.client, certificate: ca.client.certificate + ' '.repeat(MAX_MTLS_PEM_BYTES) }), null, 'mtls.certificate', /longer than 16384 bytes/],
    ['a key over 16 KiB', () => ({ ...ca.client, private_key: ca.client.private_key + ' '.repeat(MAX_MTLS_PEM_BYTES) }), null, 'mtls.private_key', /longer than/],
    ['a CA over 16 KiB', () => ({ ...ca.client, ca: ca.ca + ' '.repeat(MAX_MTLS_PEM_BYTES) }), null, 'mtls.ca', /longer than/],
  ])('refuses %s, naming the field', (_what, input, at, field, message) => {
    const r = checkEndpointMtls(input(), at ?? now())
    expect(r.ok).toBe(false)
    if (r.ok) return
    expect(r.problem).toMatchObject({ code: 'invalid_mtls', field })
    expect(r.problem.message).toMatch(message)
    // A refusal never quotes the key.
    expect(r.problem.message).not.toContain(ca.client.private_key.split('\n')[1])
  })

  it('an empty CA is none (the system authorities)', () => {
    expect(checkEndpointMtls({ ...ca.client, ca: '  ' }, now())).toMatchObject({ ok: true, mtls: { ca: null } })
    expect(checkEndpointMtls({ ...ca.client, ca: null }, now())).toMatchObject({ ok: true, mtls: { ca: null } })
  })
})

describe('certificateSubject', () => {
  it.each([
    [() => ca.client.certificate, 'CN=hookledger-client'],
    [() => ca.ca, 'CN=hookledger test CA'],
    [() => 'not a certificate', null],
  ])('%#', (pem, subject) => expect(certificateSubject(pem())).toBe(subject))
})
