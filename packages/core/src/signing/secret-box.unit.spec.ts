import { describe, expect, it } from 'vitest'
import {
  createSecretBox,
  encodeMasterKey,
  generateMasterKey,
  MASTER_KEY_BYTES,
  parseMasterKey,
} from './secret-box.js'

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'

describe('createSecretBox', () => {
  const box = createSecretBox(generateMasterKey())

  it.each([
    ['a webhook secret', SECRET],
    ['empty', ''],
    ['non-ASCII', 'clé secrète ✓ 🔑'],
    ['long', 'x'.repeat(10_000)],
  ])('roundtrips %s', (_name, plaintext) => {
    const sealed = box.seal(plaintext)
    expect(sealed).toBeInstanceOf(Uint8Array)
    expect(sealed).toHaveLength(24 + 16 + Buffer.byteLength(plaintext, 'utf8'))
    expect(box.open(sealed)).toBe(plaintext)
  })

  it('uses a fresh nonce per seal', () => {
    const a = box.seal(SECRET)
    const b = box.seal(SECRET)
    expect(Buffer.from(a.subarray(0, 24)).equals(Buffer.from(b.subarray(0, 24)))).toBe(false)
    expect(Buffer.from(a).equals(Buffer.from(b))).toBe(false)
  })

  it('never contains the plaintext, nor its base64 key part', () => {
    const sealed = Buffer.from(box.seal(SECRET))
    expect(sealed.includes(Buffer.from(SECRET))).toBe(false)
    expect(sealed.includes(Buffer.from(SECRET.slice(6)))).toBe(false)
    expect(sealed.includes(Buffer.from(SECRET.slice(6), 'base64'))).toBe(false)
    expect(sealed.toString('latin1')).not.toContain('whsec_')
  })

  it('fails to open under a wrong key', () => {
    const sealed = box.seal(SECRET)
    const other = createSecretBox(generateMasterKey())
    expect(() => other.open(sealed)).toThrow(/wrong master key or corrupted data/)
  })

  it.each([
    ['a flipped nonce bit', 0],
    ['a flipped MAC bit', 24],
    ['a flipped ciphertext bit', 24 + 16 + 3],
  ])('fails to open with %s', (_name, index) => {
    const sealed = box.seal(SECRET)
    sealed[index] = (sealed[index] ?? 0) ^ 0x01
    expect(() => box.open(sealed)).toThrow(/wrong master key or corrupted data/)
  })

  it.each([
    ['empty', new Uint8Array(0)],
    ['nonce only', new Uint8Array(24)],
    ['one byte short of the minimum', new Uint8Array(39)],
  ])('refuses a truncated box: %s', (_name, sealed) => {
    expect(() => box.open(sealed)).toThrow(/too short/)
  })

  it('refuses a zero-filled box of valid length', () => {
    expect(() => box.open(new Uint8Array(40))).toThrow(/wrong master key or corrupted data/)
  })

  it('copies the master key, so mutating the caller array later changes nothing', () => {
    const key = generateMasterKey()
    const own = createSecretBox(key)
    const sealed = own.seal(SECRET)
    key.fill(0)
    expect(own.open(sealed)).toBe(SECRET)
  })

  it.each([
    ['16 bytes', new Uint8Array(16)],
    ['33 bytes', new Uint8Array(33)],
    ['empty', new Uint8Array(0)],
  ])('refuses a master key of %s', (_name, key) => {
    expect(() => createSecretBox(key)).toThrow(/exactly 32 bytes/)
  })
})

describe('parseMasterKey', () => {
  const key = Buffer.alloc(32, 0xfb) // base64 '+/v7…', so the URL-safe form differs
  const b64 = key.toString('base64')

  it.each([
    ['padded base64', b64],
    ['unpadded base64', b64.replace(/=+$/, '')],
    ['with a trailing newline (key file)', `${b64}\n`],
    ['with surrounding spaces', `  ${b64}  `],
  ])('accepts %s', (_name, value) => {
    expect(Buffer.from(parseMasterKey(value)).equals(key)).toBe(true)
  })

  it.each([
    ['empty', '', /master key is empty/],
    ['whitespace only', '  \n', /master key is empty/],
    ['31 bytes', Buffer.alloc(31).toString('base64'), /exactly 32 bytes, got 31 bytes/],
    ['33 bytes', Buffer.alloc(33).toString('base64'), /exactly 32 bytes, got 33 bytes/],
    ['16 bytes', Buffer.alloc(16).toString('base64'), /exactly 32 bytes, got 16 bytes/],
    ['hex instead of base64', key.toString('hex'), /exactly 32 bytes, got 48 bytes/],
    ['invalid characters', `${b64.slice(0, 10)}!${b64.slice(11)}`, /not valid base64/],
    ['URL-safe alphabet', key.toString('base64url'), /not valid base64/],
    ['inner whitespace', `${b64.slice(0, 20)} ${b64.slice(20)}`, /not valid base64/],
  ])('refuses %s', (_name, value, message) => {
    expect(() => parseMasterKey(value)).toThrow(message)
  })

  it('never echoes the value in its error', () => {
    const value = Buffer.alloc(31, 0x5a).toString('base64')
    try {
      parseMasterKey(value)
      expect.unreachable()
    } catch (error) {
      expect((error as Error).message).not.toContain(value)
    }
  })
})

describe('generateMasterKey / encodeMasterKey', () => {
  it('generates distinct 32-byte keys that roundtrip through their base64 form', () => {
    const a = generateMasterKey()
    const b = generateMasterKey()
    expect(a).toHaveLength(MASTER_KEY_BYTES)
    expect(Buffer.from(a).equals(Buffer.from(b))).toBe(false)
    expect(Buffer.from(parseMasterKey(encodeMasterKey(a))).equals(Buffer.from(a))).toBe(true)
  })

  it('refuses to encode a key of the wrong length', () => {
    expect(() => encodeMasterKey(new Uint8Array(31))).toThrow(/exactly 32 bytes/)
  })
})
