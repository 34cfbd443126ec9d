import { createHash } from 'node:crypto'

/**
 * The id an attempt records for a key that signed it (`signed_with`): `key_` + the first 12 hex
 * digits of SHA-256 of the key's bytes — the decoded HMAC key for v1, the 32-byte public key
 * for v1a. 48 bits of a hash reveal nothing usable about a 256-bit key.
 */
export function signingKeyId(key: Uint8Array): string {
  return `key_${createHash('sha256').update(key).digest('hex').slice(0, 12)}`
}
