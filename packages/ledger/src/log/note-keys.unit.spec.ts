import { createHash } from 'node:crypto'
import nacl from 'tweetnacl'
import { describe, expect, it } from 'vitest'
import {
  ed25519PublicKey,
  ed25519Sign,
  ed25519VerifyFunction,
  encodeSignerKey,
  encodeVerifierKey,
  isValidKeyName,
  NoteFormatError,
  noteKeyId,
  noteSignerPublicKey,
  parseSignerKey,
  parseVerifierKey,
} from './note-keys.js'

// golang.org/x/mod/sumdb/note's test keys (note_test.go) and c2sp.org/signed-note's example vkey.
const PETER_VKEY = 'PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW'
const PETER_SKEY = 'PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz'
const ENOCH_VKEY = 'EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop'
const SPEC_VKEY = 'example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k'

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex')
const codeOf = (f: () => unknown): string => {
  try {
    f()
  } catch (error) {
    if (error instanceof NoteFormatError) return error.code
    throw error
  }
  return 'no error'
}

describe('key IDs and vkeys: known answers', () => {
  it.each([
    [PETER_VKEY, 'PeterNeumann', 'c74f20a3'],
    [ENOCH_VKEY, 'EnochRoot', 'af0cfe78'],
    [SPEC_VKEY, 'example.com/foo', '530d903a'],
  ])('parses %s and encodes it back byte for byte', (vkey, name, keyId) => {
    const key = parseVerifierKey(vkey)
    expect(key.name).toBe(name)
    expect(hex(key.keyId)).toBe(keyId)
    expect(key.type).toBe(0x01)
    expect(key.publicKey).toHaveLength(32)
    expect(hex(noteKeyId(name, 0x01, key.publicKey))).toBe(keyId)
    expect(encodeVerifierKey(name, key.publicKey)).toBe(vkey)
  })

  it('computes the key ID as SHA-256(name ‖ 0x0A ‖ type ‖ key)[:4]', () => {
    const key = new Uint8Array(32).fill(7)
    const want = createHash('sha256').update(Buffer.concat([Buffer.from('log.example/a\n'), Buffer.of(0x04), key])).digest().subarray(0, 4)
    expect(hex(noteKeyId('log.example/a', 0x04, key))).toBe(want.toString('hex'))
    expect(hex(noteKeyId('log.example/a', 0x01, key))).not.toBe(want.toString('hex'))
  })

  it("parses Go's skey, whose public key is the vkey's", () => {
    const signer = parseSignerKey(PETER_SKEY)
    expect(signer.name).toBe('PeterNeumann')
    expect(encodeVerifierKey(signer.name, noteSignerPublicKey(signer))).toBe(PETER_VKEY)
    expect(encodeSignerKey(signer)).toBe(PETER_SKEY)
  })
})

describe('parseVerifierKey refuses', () => {
  it.each([
    ['no plus at all', 'PeterNeumann', 'malformed_vkey'],
    ['one part missing', 'PeterNeumann+c74f20a3', 'malformed_vkey'],
    ['an empty name', '+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW', 'invalid_name'],
    ['a name with a space', 'Peter Neumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW', 'invalid_name'],
    ['a name with a no-break space', 'Peter\u00a0Neumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW', 'invalid_name'],
    ['a name with an ideographic space', 'Peter\u3000+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW', 'invalid_name'],
    ['uppercase hex', 'PeterNeumann+C74F20A3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW', 'malformed_vkey'],
    ['seven hex digits', 'PeterNeumann+c74f20a+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW', 'malformed_vkey'],
    ['a 0x prefix', 'PeterNeumann+0xc74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW', 'malformed_vkey'],
    ['a wrong key ID', 'PeterNeumann+c74f20a4+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW', 'vkey_id_mismatch'],
    ['another key name', 'PeterNeumann2+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW', 'vkey_id_mismatch'],
    ['non-base64 key', 'PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10T!', 'malformed_vkey'],
    ['an empty key', 'PeterNeumann+c74f20a3+', 'malformed_vkey'],
    ['a trailing newline', `${PETER_VKEY}\n`, 'malformed_vkey'],
    // Go's own two: a wrong-length key and an unknown algorithm, each with its key ID adjusted.
    ['a wrong-length key', 'PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY==', 'malformed_vkey'],
    ['an unknown algorithm', 'PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW', 'unsupported_key_type'],
  ])('%s', (_, vkey, code) => {
    expect(codeOf(() => parseVerifierKey(vkey))).toBe(code)
  })

  it('a cosigner (0x04) key where only Ed25519 notes are accepted, and takes it when asked', () => {
    const vkey = encodeVerifierKey('witness.example/w1', new Uint8Array(32).fill(3), 0x04)
    expect(codeOf(() => parseVerifierKey(vkey))).toBe('unsupported_key_type')
    expect(parseVerifierKey(vkey, [0x04]).type).toBe(0x04)
  })

  // note_test.go's TestNewVerifier: every proper substring and every one-byte change is refused.
  it("every proper substring and every one-character change of Go's vkey", () => {
    let refused = 0
    for (let i = 0; i <= PETER_VKEY.length; i++) {
      for (let j = i + 1; j <= PETER_VKEY.length; j++) {
        if (i === 0 && j === PETER_VKEY.length) continue
        expect(codeOf(() => parseVerifierKey(PETER_VKEY.slice(i, j)))).not.toBe('no error')
        refused++
      }
    }
    for (let i = 0; i < PETER_VKEY.length; i++) {
      const changed = PETER_VKEY.slice(0, i) + String.fromCharCode(PETER_VKEY.charCodeAt(i) + 1) + PETER_VKEY.slice(i + 1)
      expect(codeOf(() => parseVerifierKey(changed))).not.toBe('no error')
      refused++
    }
    expect(refused).toBeGreaterThan(2000)
  })
})

describe('parseSignerKey refuses', () => {
  it.each([
    ['no PRIVATE+KEY prefix', PETER_SKEY.slice('PRIVATE+KEY+'.length), 'malformed_skey'],
    ['a vkey', PETER_VKEY, 'malformed_skey'],
    ['a wrong key ID', PETER_SKEY.replace('c74f20a3', 'c74f20a4'), 'vkey_id_mismatch'],
    ['a bad name', PETER_SKEY.replace('PeterNeumann', 'Peter Neumann'), 'malformed_skey'],
    ['a short seed', 'PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKA==', 'malformed_skey'],
    ['another algorithm', 'PRIVATE+KEY+PeterNeumann+c74f20a3+BIEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz', 'malformed_skey'],
  ])('%s', (_, skey, code) => {
    expect(codeOf(() => parseSignerKey(skey))).toBe(code)
  })
})

describe('key names', () => {
  it.each(['a', 'example.com/log42', 'oid/1.3.6.1.4.1', 'ünïcödé', 'a=b/c-d_e~f'])('accepts %j', (name) => {
    expect(isValidKeyName(name)).toBe(true)
  })
  it.each(['', 'a b', 'a+b', 'a\tb', 'a\nb', 'a\u0085b', 'a\u2028b', 'a\u0001b', 'a\ud800b'])('refuses %j', (name) => {
    expect(isValidKeyName(name)).toBe(false)
  })
})

describe('Ed25519 from raw bytes agrees with tweetnacl', () => {
  const seeds = [new Uint8Array(32), new Uint8Array(32).fill(0xff), Uint8Array.from({ length: 32 }, (_, i) => i), parseSignerKey(PETER_SKEY).seed]
  it.each(seeds.map((seed) => [hex(seed).slice(0, 8), seed] as const))('seed %s…', (_, seed) => {
    const pair = nacl.sign.keyPair.fromSeed(seed)
    expect(hex(ed25519PublicKey(seed))).toBe(hex(pair.publicKey))
    const message = new TextEncoder().encode('cosignature/v1\ntime 1\nexample\n')
    const signature = ed25519Sign(seed, message)
    // Ed25519 is deterministic: the same bytes, and each side verifies the other's.
    expect(hex(signature)).toBe(hex(nacl.sign.detached(message, pair.secretKey)))
    expect(nacl.sign.detached.verify(message, signature, pair.publicKey)).toBe(true)
    const check = ed25519VerifyFunction(pair.publicKey)
    expect(check(message, signature)).toBe(true)
    expect(check(message, signature.slice(0, 63))).toBe(false)
    const flipped = signature.slice()
    flipped[10]! ^= 1
    expect(check(message, flipped)).toBe(false)
  })

  it('refuses a seed or public key of the wrong length', () => {
    expect(codeOf(() => ed25519PublicKey(new Uint8Array(31)))).toBe('invalid_key')
    expect(codeOf(() => ed25519Sign(new Uint8Array(33), new Uint8Array()))).toBe('invalid_key')
    expect(codeOf(() => ed25519VerifyFunction(new Uint8Array(31)))).toBe('invalid_key')
    expect(codeOf(() => encodeVerifierKey('a', new Uint8Array(31)))).toBe('invalid_key')
    expect(codeOf(() => encodeVerifierKey('a b', new Uint8Array(32)))).toBe('invalid_name')
  })
})
