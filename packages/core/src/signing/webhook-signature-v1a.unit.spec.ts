import nacl from 'tweetnacl'
import { describe, expect, it } from 'vitest'
import { signWebhook } from './webhook-signature.js'
import {
  decodeV1aPublicKey,
  generateV1aKeyPair,
  parseV1aSecretKey,
  v1aKeyId,
  v1aSignatureEntry,
  v1aSigningKeyObject,
} from './webhook-signature-v1a.js'
import { generateWebhookSecret, secretKeyId } from './webhook-signature.js'

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64')
const utf8 = (s: string) => new Uint8Array(Buffer.from(s, 'utf8'))

/**
 * Known answers. 1: Svix's `test_asymmetric_key_signing` (docs/webhook-anchors.md, vector 3),
 * the only published v1a vector. 2: the RFC 8032 §7.1 test-1 seed signing a webhook message
 * with a non-ASCII body, its signature computed once with tweetnacl and frozen here.
 */
const VECTORS = [
  {
    name: 'svix asymmetric vector',
    secretKey:
      'whsk_6Xb/dCcHpPea21PS1N9VY/NZW723CEc77N4rJCubMbfVKIDij2HKpMKkioLlX0dRqSKJp4AJ6p9lMicMFs6Kvg==',
    publicKey: 'whpk_1SiA4o9hyqTCpIqC5V9HUakiiaeACeqfZTInDBbOir4=',
    id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
    timestamp: 1614265330,
    body: '{"test": 2432232314}',
    signature:
      'v1a,hnO3f9T8Ytu9HwrXslvumlUpqtNVqkhqw/enGzPCXe5BdqzCInXqYXFymVJaA7AZdpXwVLPo3mNl8EM+m7TBAg==',
  },
  {
    name: 'RFC 8032 test-1 seed, UTF-8 body',
    secretKey:
      'whsk_nWGxne/9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2DXWpgBgrEKt9VL/tPJZAc6DuFy89qmIyWvAhpo9wdRGg==',
    publicKey: 'whpk_11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=',
    id: 'evt_01J9Z3',
    timestamp: 1700000000,
    body: '{"id":"evt_01J9Z3","type":"booking.created","data":{"title":"Ünïcødé ✓"}}',
    signature:
      'v1a,obbAe2YkYzZh3srNRCCycx1LaSgERtzwApqtJj7WVeyO/HIlO9+AKjaqXGjaOKbeXDUDw3f0Mfcw5MOKAOilAw==',
  },
] as const

/** The receiver's side, with an independent ed25519 implementation. */
function verifiesWithTweetnacl(
  entry: string,
  publicKey: string,
  m: { id: string; timestamp: number; body: string },
): boolean {
  const [version, signature] = entry.split(',')
  if (version !== 'v1a' || signature === undefined) return false
  return nacl.sign.detached.verify(
    utf8(`${m.id}.${m.timestamp}.${m.body}`),
    new Uint8Array(Buffer.from(signature, 'base64')),
    decodeV1aPublicKey(publicKey),
  )
}

describe('v1a known answers (node:crypto signs, tweetnacl cross-checks)', () => {
  it.each(VECTORS)('$name: signWebhook gives the exact header', (v) => {
    const signed = signWebhook({ id: v.id, timestamp: v.timestamp, body: v.body, secrets: [], v1aSecretKeys: [v.secretKey] })
    expect(signed.headers['webhook-signature']).toBe(v.signature)
    expect(signed.keyIds).toEqual([v1aKeyId(v.publicKey)])
  })

  it.each(VECTORS)('$name: tweetnacl produces the same signature from the same key', (v) => {
    const secretKey = new Uint8Array(Buffer.from(v.secretKey.slice('whsk_'.length), 'base64'))
    const sig = nacl.sign.detached(utf8(`${v.id}.${v.timestamp}.${v.body}`), secretKey)
    expect(`v1a,${b64(sig)}`).toBe(v.signature)
    expect(verifiesWithTweetnacl(v.signature, v.publicKey, v)).toBe(true)
  })

  it.each(VECTORS)('$name: the whsk_ key is seed ‖ the whpk_ key, as tweetnacl derives it', (v) => {
    const { seed, publicKey } = parseV1aSecretKey(v.secretKey)
    expect(b64(nacl.sign.keyPair.fromSeed(seed).publicKey)).toBe(b64(publicKey))
    expect(`whpk_${b64(publicKey)}`).toBe(v.publicKey)
  })
})

describe('signWebhook with v1 and v1a keys together', () => {
  const message = { id: 'evt_1', timestamp: 1_700_000_123, body: '{"id":"evt_1"}' }
  const secret = generateWebhookSecret()
  const current = generateV1aKeyPair()
  const previous = generateV1aKeyPair()

  it.each<[string, string[], string[], string[]]>([
    ['v1 only', [secret], [], ['v1']],
    ['v1a only', [], [current.secretKey], ['v1a']],
    ['v1+v1a', [secret], [current.secretKey], ['v1', 'v1a']],
    ['v1a in a rotation grace window', [], [current.secretKey, previous.secretKey], ['v1a', 'v1a']],
    ['both, both rotating', [secret, generateWebhookSecret()], [current.secretKey, previous.secretKey], ['v1', 'v1', 'v1a', 'v1a']],
  ])('%s: one space-separated entry per key, v1 first', (_name, secrets, v1aSecretKeys, versions) => {
    const signed = signWebhook({ ...message, secrets, v1aSecretKeys })
    const entries = signed.headers['webhook-signature'].split(' ')
    expect(entries.map((e) => e.split(',')[0])).toEqual(versions)
    expect(signed.keyIds).toHaveLength(entries.length)
  })

  it('each v1a entry verifies with its own public key only, and names it in keyIds', () => {
    const signed = signWebhook({ ...message, secrets: [secret], v1aSecretKeys: [current.secretKey, previous.secretKey] })
    const [, sigCurrent, sigPrevious] = signed.headers['webhook-signature'].split(' ') as [string, string, string]
    expect(verifiesWithTweetnacl(sigCurrent, current.publicKey, message)).toBe(true)
    expect(verifiesWithTweetnacl(sigPrevious, previous.publicKey, message)).toBe(true)
    expect(verifiesWithTweetnacl(sigCurrent, previous.publicKey, message)).toBe(false)
    expect(signed.keyIds).toEqual([secretKeyId(secret), v1aKeyId(current.publicKey), v1aKeyId(previous.publicKey)])
  })

  it.each<[string, Partial<typeof message>]>([
    ['a changed body', { body: '{"id":"evt_2"}' }],
    ['a changed id', { id: 'evt_2' }],
    ['a changed timestamp', { timestamp: message.timestamp + 1 }],
  ])('fails verification on %s', (_name, over) => {
    const { headers } = signWebhook({ ...message, secrets: [], v1aSecretKeys: [current.secretKey] })
    expect(verifiesWithTweetnacl(headers['webhook-signature'], current.publicKey, { ...message, ...over })).toBe(false)
  })

  it('throws when there is no key of either kind', () => {
    expect(() => signWebhook({ ...message, secrets: [], v1aSecretKeys: [] })).toThrow(/at least one/)
  })
})

describe('generateV1aKeyPair', () => {
  it('gives whsk_ + 64 bytes and whpk_ + 32 bytes, consistent with each other', () => {
    const pair = generateV1aKeyPair()
    expect(pair.secretKey).toMatch(/^whsk_[A-Za-z0-9+/]{86}==$/)
    expect(pair.publicKey).toMatch(/^whpk_[A-Za-z0-9+/]{43}=$/)
    const { seed, publicKey } = parseV1aSecretKey(pair.secretKey)
    expect(b64(nacl.sign.keyPair.fromSeed(seed).publicKey)).toBe(b64(publicKey))
    expect(b64(decodeV1aPublicKey(pair.publicKey))).toBe(b64(publicKey))
  })

  it('never repeats', () => {
    expect(new Set(Array.from({ length: 50 }, () => generateV1aKeyPair().secretKey)).size).toBe(50)
  })
})

describe('parsing keys', () => {
  const pair = generateV1aKeyPair()
  const body = pair.secretKey.slice('whsk_'.length)

  it.each([
    ['no prefix', body, /must start with whsk_/],
    ['the public key', pair.publicKey, /must start with whsk_/],
    ['an HMAC secret', generateWebhookSecret(), /must start with whsk_/],
    ['bad base64', 'whsk_' + body.replace(/.$/, '!'), /not valid base64/],
    ['URL-safe alphabet', 'whsk_' + Buffer.from(parseV1aSecretKey(pair.secretKey).seed).toString('base64url'), /not valid base64|got/],
    ['the 32-byte seed alone', 'whsk_' + b64(parseV1aSecretKey(pair.secretKey).seed), /got 32/],
  ])('parseV1aSecretKey refuses %s without echoing it', (_name, key, message) => {
    let error: Error | undefined
    try {
      parseV1aSecretKey(key)
    } catch (err) {
      error = err as Error
    }
    expect(error?.message).toMatch(message)
    expect(error?.message).not.toContain(body.slice(0, 16))
  })

  it.each([
    ['no prefix', pair.publicKey.slice('whpk_'.length), /must start with whpk_/],
    ['the secret key', pair.secretKey, /must start with whpk_/],
    ['31 bytes', 'whpk_' + b64(new Uint8Array(31)), /got 31/],
  ])('decodeV1aPublicKey refuses %s', (_name, key, message) => {
    expect(() => decodeV1aPublicKey(key)).toThrow(message)
  })

  it.each([
    ['a 31-byte seed', new Uint8Array(31), new Uint8Array(32), /seed must be 32 bytes/],
    ['a 33-byte public key', new Uint8Array(32), new Uint8Array(33), /public key must be 32 bytes/],
  ])('v1aSigningKeyObject refuses %s', (_name, seed, publicKey, message) => {
    expect(() => v1aSigningKeyObject(seed, publicKey)).toThrow(message)
  })

  it('a KeyObject made once signs several messages', () => {
    const { seed, publicKey } = parseV1aSecretKey(pair.secretKey)
    const key = v1aSigningKeyObject(seed, publicKey)
    for (const body of ['a', 'b']) {
      const entry = v1aSignatureEntry(key, utf8(`e.1.${body}`))
      expect(verifiesWithTweetnacl(entry, pair.publicKey, { id: 'e', timestamp: 1, body })).toBe(true)
    }
  })
})
