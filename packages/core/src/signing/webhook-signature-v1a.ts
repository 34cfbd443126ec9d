import { createPrivateKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto'
import { signingKeyId } from './signing-key-id.js'
import { decodeStrictBase64 } from './strict-base64.js'

/**
 * Standard Webhooks `v1a`: ed25519 over `<id>.<timestamp>.<body>`, header entry
 * `v1a,<base64 signature>`. The receiver verifies with the endpoint's public key alone, so it
 * holds nothing that could forge a request.
 *
 * Key formats are Svix's, the one implementation of v1a (docs/webhook-anchors.md, vector 3):
 * `whsk_` + base64 of the 64-byte secret key in the NaCl layout (32-byte seed ‖ 32-byte public
 * key, what tweetnacl calls `secretKey`), `whpk_` + base64 of the 32-byte public key.
 *
 * Signing uses `node:crypto` (10–20k signatures/s here; tweetnacl manages 60–100/s).
 */

export const V1A_SECRET_KEY_PREFIX = 'whsk_'
export const V1A_PUBLIC_KEY_PREFIX = 'whpk_'

const SEED_BYTES = 32
const PUBLIC_KEY_BYTES = 32
const SECRET_KEY_BYTES = SEED_BYTES + PUBLIC_KEY_BYTES

// RFC 8410 PKCS#8 of an ed25519 private key: a fixed 16-byte DER header, then the raw seed.
const PKCS8_ED25519_HEADER_BYTES = 16
// SPKI of an ed25519 public key: a fixed 12-byte header, then the 32 raw bytes.
const SPKI_ED25519_HEADER_BYTES = 12

/** An endpoint's v1a key pair, in its external forms. */
export interface V1aKeyPair {
  /** `whsk_…`: sealed at rest, never shown. */
  readonly secretKey: string
  /** `whpk_…`: the endpoint object carries it; receivers verify with it. */
  readonly publicKey: string
}

/** A fresh ed25519 key pair. */
export function generateV1aKeyPair(): V1aKeyPair {
  const pair = generateKeyPairSync('ed25519')
  const seed = pair.privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(PKCS8_ED25519_HEADER_BYTES)
  const pub = pair.publicKey.export({ format: 'der', type: 'spki' }).subarray(SPKI_ED25519_HEADER_BYTES)
  return {
    secretKey: V1A_SECRET_KEY_PREFIX + Buffer.concat([seed, pub]).toString('base64'),
    publicKey: V1A_PUBLIC_KEY_PREFIX + Buffer.from(pub).toString('base64'),
  }
}

/** The two halves of a `whsk_` key. */
export interface V1aSecretKeyParts {
  readonly seed: Uint8Array
  readonly publicKey: Uint8Array
}

/**
 * Splits a `whsk_` key into seed and public key. Throws on a missing prefix, bad base64 or a
 * length other than 64 bytes; the error never includes the key. Does not re-derive the public
 * half from the seed (that would cost a key derivation per attempt): keys come from
 * `generateV1aKeyPair` and travel sealed.
 */
export function parseV1aSecretKey(secretKey: string): V1aSecretKeyParts {
  if (typeof secretKey !== 'string' || !secretKey.startsWith(V1A_SECRET_KEY_PREFIX)) {
    throw new Error(`v1a secret key must start with ${V1A_SECRET_KEY_PREFIX}`)
  }
  const bytes = decodeStrictBase64(secretKey.slice(V1A_SECRET_KEY_PREFIX.length))
  if (bytes === null) throw new Error('v1a secret key is not valid base64')
  if (bytes.length !== SECRET_KEY_BYTES) {
    throw new Error(`v1a secret key must decode to ${SECRET_KEY_BYTES} bytes, got ${bytes.length}`)
  }
  return { seed: bytes.subarray(0, SEED_BYTES), publicKey: bytes.subarray(SEED_BYTES) }
}

/** The 32 bytes of a `whpk_` key. Throws on a missing prefix, bad base64 or a wrong length. */
export function decodeV1aPublicKey(publicKey: string): Uint8Array {
  if (typeof publicKey !== 'string' || !publicKey.startsWith(V1A_PUBLIC_KEY_PREFIX)) {
    throw new Error(`v1a public key must start with ${V1A_PUBLIC_KEY_PREFIX}`)
  }
  const bytes = decodeStrictBase64(publicKey.slice(V1A_PUBLIC_KEY_PREFIX.length))
  if (bytes === null) throw new Error('v1a public key is not valid base64')
  if (bytes.length !== PUBLIC_KEY_BYTES) {
    throw new Error(`v1a public key must decode to ${PUBLIC_KEY_BYTES} bytes, got ${bytes.length}`)
  }
  return bytes
}

/** The `signed_with` id of a v1a key: from its public key, so a receiver can compute it too. */
export function v1aKeyId(publicKey: string): string {
  return signingKeyId(decodeV1aPublicKey(publicKey))
}

/**
 * A node:crypto signing key from the two halves of a `whsk_` key. Imported as a JWK: with
 * OpenSSL 3 that takes ~50 µs, where the same key as PKCS#8 DER takes ~380 µs (measured here),
 * which would cost more than the signature itself (~35 µs) on every attempt.
 */
export function v1aSigningKeyObject(seed: Uint8Array, publicKey: Uint8Array): KeyObject {
  if (seed.length !== SEED_BYTES) throw new Error(`ed25519 seed must be ${SEED_BYTES} bytes`)
  if (publicKey.length !== PUBLIC_KEY_BYTES) throw new Error(`ed25519 public key must be ${PUBLIC_KEY_BYTES} bytes`)
  return createPrivateKey({
    key: { kty: 'OKP', crv: 'Ed25519', d: Buffer.from(seed).toString('base64url'), x: Buffer.from(publicKey).toString('base64url') },
    format: 'jwk',
  })
}

/** `v1a,<base64 ed25519 signature of message>`. */
export function v1aSignatureEntry(key: KeyObject, message: Uint8Array): string {
  // Ed25519 hashes internally: the algorithm argument must be null.
  return `v1a,${sign(null, message, key).toString('base64')}`
}
