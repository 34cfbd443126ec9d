import { Webhook, WebhookVerificationError } from 'standardwebhooks'
import { describe, expect, it } from 'vitest'
import {
  decodeWebhookSecret,
  generateWebhookSecret,
  secretKeyId,
  signWebhook,
  type SignWebhookInput,
  type WebhookHeaders,
} from './webhook-signature.js'

/** The two v1 vectors of docs/webhook-anchors.md (b), as published by Standard Webhooks. */
const VECTORS = [
  {
    secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
    timestamp: 1614265330,
    body: '{"test": 2432232314}',
    signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
  },
  {
    secret: 'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD',
    id: 'msg_27UH4WbU6Z5A5EzD8u03UvzRbpk',
    timestamp: 1649367553,
    body: '{"email":"test@example.com","username":"test_user"}',
    signature: 'v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw=',
  },
] as const

const nowSeconds = () => Math.floor(Date.now() / 1000)

describe('signWebhook: Standard Webhooks test vectors', () => {
  it.each(VECTORS)('vector $id gives the exact headers', (vector) => {
    const signed = signWebhook({
      id: vector.id,
      timestamp: vector.timestamp,
      body: vector.body,
      secrets: [vector.secret],
    })
    expect(signed.headers).toEqual({
      'webhook-id': vector.id,
      'webhook-timestamp': String(vector.timestamp),
      'webhook-signature': vector.signature,
    })
    expect(signed.keyIds).toEqual([secretKeyId(vector.secret)])
  })

  it.each(VECTORS)('vector $id is also what standardwebhooks.sign produces', (vector) => {
    const expected = new Webhook(vector.secret).sign(
      vector.id,
      new Date(vector.timestamp * 1000),
      vector.body,
    )
    expect(expected).toBe(vector.signature)
  })

  it('joins one signature per secret, in order, with single spaces', () => {
    const [a, b] = VECTORS
    const secrets = [a.secret, b.secret]
    const signed = signWebhook({ id: a.id, timestamp: a.timestamp, body: a.body, secrets })
    const [first, second] = signed.headers['webhook-signature'].split(' ')
    expect(first).toBe(a.signature)
    expect(second).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/)
    expect(second).not.toBe(a.signature)
    expect(signed.keyIds).toEqual([secretKeyId(a.secret), secretKeyId(b.secret)])
  })
})

describe('signWebhook: verified by the standardwebhooks library as an independent receiver', () => {
  const current = generateWebhookSecret()
  const previous = generateWebhookSecret()
  const unrelated = generateWebhookSecret()
  const body = JSON.stringify({
    id: 'evt_01',
    type: 'corpus.note.changed',
    subject: 'wiki://software/project/standmeet/architecture',
    occurred_at: '2026-05-01T12:00:00.000Z',
    data: {
      op: 'updated',
      note_id: 'n_1',
      published: true,
      was_published: true,
      title: 'Ünïcødé ✓',
    },
  })
  const sign = (timestamp = nowSeconds()) =>
    signWebhook({ id: 'evt_01', timestamp, body, secrets: [current, previous] })

  it.each([
    ['current', current],
    ['previous', previous],
  ])('the two-secret header verifies with the %s secret alone', (_name, secret) => {
    const { headers } = sign()
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body))
  })

  it('a Buffer body of the same UTF-8 bytes verifies too', () => {
    const { headers } = sign()
    expect(() => new Webhook(current).verify(Buffer.from(body, 'utf8'), headers)).not.toThrow()
  })

  it.each<[string, (headers: WebhookHeaders) => [string, WebhookHeaders], string]>([
    ['tampered body', (h) => [body.replace('n_1', 'n_2'), h], current],
    ['body with trailing newline', (h) => [body + '\n', h], current],
    ['tampered id', (h) => [body, { ...h, 'webhook-id': 'evt_02' }], current],
    [
      'tampered timestamp',
      (h) => [body, { ...h, 'webhook-timestamp': String(Number(h['webhook-timestamp']) - 1) }],
      current,
    ],
    ['a secret that did not sign', (h) => [body, h], unrelated],
    [
      'signature list with the valid entries removed',
      (h) => [
        body,
        { ...h, 'webhook-signature': 'v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=' },
      ],
      current,
    ],
  ])('fails verification: %s', (_name, tamper, secret) => {
    const [payload, headers] = tamper(sign().headers)
    expect(() => new Webhook(secret).verify(payload, headers)).toThrow(WebhookVerificationError)
  })

  it.each([
    ['too old', -400],
    ['too new', 400],
  ])('fails verification when the timestamp is %s (receiver tolerance is 300 s)', (_n, skew) => {
    const { headers } = sign(nowSeconds() + skew)
    expect(() => new Webhook(current).verify(body, headers)).toThrow(WebhookVerificationError)
  })
})

describe('signWebhook: input validation', () => {
  const base: SignWebhookInput = {
    id: 'evt_1',
    timestamp: 1_700_000_000,
    body: '{}',
    secrets: [VECTORS[0].secret],
  }

  it.each<[string, Partial<SignWebhookInput>, RegExp]>([
    ['no secrets', { secrets: [] }, /at least one webhook secret/],
    ['empty id', { id: '' }, /webhook id is empty/],
    ['id with a newline', { id: 'evt\r\nx-injected: 1' }, /control characters/],
    ['fractional timestamp', { timestamp: 1.5 }, /non-negative integer/],
    ['negative timestamp', { timestamp: -1 }, /non-negative integer/],
    ['milliseconds by mistake', { timestamp: Number.MAX_SAFE_INTEGER + 1 }, /non-negative integer/],
    ['a bad second secret', { secrets: [VECTORS[0].secret, 'whsec_'] }, /webhook secret is empty/],
  ])('throws on %s', (_name, over, message) => {
    expect(() => signWebhook({ ...base, ...over })).toThrow(message)
  })
})

describe('generateWebhookSecret', () => {
  it('is whsec_ + base64 of 32 random bytes, usable by standardwebhooks', () => {
    const secret = generateWebhookSecret()
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
    expect(decodeWebhookSecret(secret)).toHaveLength(32)
    expect(() => new Webhook(secret)).not.toThrow()
  })

  it('never repeats', () => {
    const secrets = new Set(Array.from({ length: 100 }, generateWebhookSecret))
    expect(secrets.size).toBe(100)
  })
})

describe('decodeWebhookSecret', () => {
  const key32 = Buffer.alloc(32, 7).toString('base64')

  it.each([
    ['whsec_ + padded 32 bytes', `whsec_${key32}`, 32],
    ['no prefix', key32, 32],
    ['unpadded', `whsec_${key32.replace(/=+$/, '')}`, 32],
    ['24-byte vector secret', VECTORS[0].secret, 24],
    ['64 bytes', `whsec_${Buffer.alloc(64, 1).toString('base64')}`, 64],
  ])('decodes %s', (_name, secret, bytes) => {
    expect(decodeWebhookSecret(secret)).toHaveLength(bytes)
  })

  it.each([
    ['empty string', '', /empty/],
    ['prefix only', 'whsec_', /empty/],
    ['non-base64 characters', 'whsec_MfKQ9r8GKYqrTwjU!D8ILPZIo2LaLaSw', /not valid base64/],
    ['URL-safe alphabet', 'whsec_MfKQ9r8GKYqrTwjU-D8ILPZIo2LaLa_w', /not valid base64/],
    ['inner whitespace', 'whsec_MfKQ9r8GKYqrTwjU PD8ILPZIo2LaLaSw', /not valid base64/],
    ['misplaced padding', 'whsec_MfKQ9r8GKYqrTwjU=D8ILPZIo2LaLaSw', /not valid base64/],
    ['impossible length', `whsec_${key32.slice(0, 41)}`, /not valid base64/],
    ['16 bytes (too short)', `whsec_${Buffer.alloc(16).toString('base64')}`, /got 16/],
    ['65 bytes (too long)', `whsec_${Buffer.alloc(65).toString('base64')}`, /got 65/],
  ])('refuses %s', (_name, secret, message) => {
    expect(() => decodeWebhookSecret(secret)).toThrow(message)
  })

  it('never echoes the secret in its error', () => {
    const secret = `whsec_${Buffer.alloc(16, 9).toString('base64')}`
    expect(() => decodeWebhookSecret(secret)).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining(secret.slice(6)) }),
    )
  })
})

describe('secretKeyId', () => {
  it('is key_ + 12 hex digits, stable, and prefix-independent', () => {
    const secret = VECTORS[0].secret
    expect(secretKeyId(secret)).toMatch(/^key_[0-9a-f]{12}$/)
    expect(secretKeyId(secret)).toBe(secretKeyId(secret))
    expect(secretKeyId(secret)).toBe(secretKeyId(secret.slice('whsec_'.length)))
  })

  it('differs between secrets and does not reveal the key', () => {
    const a = generateWebhookSecret()
    const b = generateWebhookSecret()
    expect(secretKeyId(a)).not.toBe(secretKeyId(b))
    const keyHex = Buffer.from(decodeWebhookSecret(a)).toString('hex')
    expect(keyHex).not.toContain(secretKeyId(a).slice(4))
    expect(a).not.toContain(secretKeyId(a).slice(4))
  })

  it('refuses an invalid secret', () => {
    expect(() => secretKeyId('whsec_')).toThrow(/empty/)
  })
})
