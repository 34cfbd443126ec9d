/**
 * The worker opens an endpoint's sealed signing secret (and its custom headers', mTLS key's and
 * OAuth client secret's) for every attempt. Opening is XSalsa20-Poly1305 in JavaScript
 * (tweetnacl): with the base64 decoding around it, ~15 µs a delivery of the drain's profile, for
 * the same few values over and over. This box remembers what it opened, keyed by the sealed
 * bytes: a rotated secret is a new sealed value, so nothing stale is ever returned.
 *
 * The plaintext stays in the worker's memory, which holds the master key that opens every one of
 * them anyway: remembering adds no secret a reader of that memory could not already have. At
 * most `capacity` values are kept; when full, all are forgotten at once.
 */
import type { SecretBox } from '@hookledger/core'

export const REMEMBERED_SECRETS = 10_000

export function rememberingSecretBox(box: SecretBox, capacity = REMEMBERED_SECRETS): SecretBox {
  const opened = new Map<string, string>()
  return Object.freeze({
    seal: (plaintext: string) => box.seal(plaintext),
    open(sealed: Uint8Array): string {
      const key = Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength).toString('base64')
      let plaintext = opened.get(key)
      if (plaintext === undefined) {
        // A wrong key or corrupted bytes throw here, every time: a failure is never remembered.
        plaintext = box.open(sealed)
        if (opened.size >= capacity) opened.clear()
        opened.set(key, plaintext)
      }
      return plaintext
    },
  })
}
