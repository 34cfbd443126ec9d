import { randomBytes } from 'node:crypto'
import nacl from 'tweetnacl'

/**
 * Sealing of endpoint secrets at rest with NaCl secretbox (XSalsa20-Poly1305) under the master
 * key (SPEC §3). This module is the only place a sealed secret is opened.
 */

/** Master key length required by secretbox. */
export const MASTER_KEY_BYTES = nacl.secretbox.keyLength // 32

const NONCE_BYTES = nacl.secretbox.nonceLength // 24
const MAC_BYTES = nacl.secretbox.overheadLength // 16

/** Seals and opens secrets under one master key. */
export interface SecretBox {
  /** `nonce(24) ‖ box`, with a fresh random nonce per call. */
  seal(plaintext: string): Uint8Array
  /** Throws when the key is wrong or the bytes were corrupted or truncated. */
  open(sealed: Uint8Array): string
}

/**
 * How many bytes of UTF-8 a sealed value holds, without opening it (the box adds a nonce and a
 * MAC of fixed size): enough to count a kept secret against a size limit.
 */
export const sealedPlaintextBytes = (sealed: Uint8Array): number => Math.max(0, sealed.length - NONCE_BYTES - MAC_BYTES)

const utf8Decoder = new TextDecoder('utf-8', { fatal: true })
const utf8Encoder = new TextEncoder()

/** A box bound to `masterKey` (32 bytes; copied, so later changes to the array do not matter). */
export function createSecretBox(masterKey: Uint8Array): SecretBox {
  if (!(masterKey instanceof Uint8Array) || masterKey.length !== MASTER_KEY_BYTES) {
    throw new Error(`master key must be exactly ${MASTER_KEY_BYTES} bytes`)
  }
  const key = Uint8Array.from(masterKey)
  return Object.freeze({
    seal(plaintext: string): Uint8Array {
      // node:crypto for the nonce: tweetnacl's own PRNG lookup depends on the host environment.
      const nonce = new Uint8Array(randomBytes(NONCE_BYTES))
      const box = nacl.secretbox(utf8Encoder.encode(plaintext), nonce, key)
      const sealed = new Uint8Array(NONCE_BYTES + box.length)
      sealed.set(nonce, 0)
      sealed.set(box, NONCE_BYTES)
      return sealed
    },
    open(sealed: Uint8Array): string {
      if (!(sealed instanceof Uint8Array) || sealed.length < NONCE_BYTES + MAC_BYTES) {
        throw new Error('cannot open sealed secret: too short to be a sealed box')
      }
      const opened = nacl.secretbox.open(
        sealed.subarray(NONCE_BYTES),
        sealed.subarray(0, NONCE_BYTES),
        key,
      )
      if (opened === null) {
        throw new Error('cannot open sealed secret: wrong master key or corrupted data')
      }
      try {
        return utf8Decoder.decode(opened)
      } catch {
        throw new Error('cannot open sealed secret: plaintext is not UTF-8')
      }
    },
  })
}

/**
 * Parses the master key setting: standard base64 (surrounding whitespace ignored, so a key file
 * with a trailing newline works) that must decode to exactly 32 bytes. The error never echoes
 * the value.
 */
export function parseMasterKey(base64: string): Uint8Array {
  const encoded = typeof base64 === 'string' ? base64.trim() : ''
  if (encoded.length === 0) {
    throw new Error(`master key is empty: expected base64 of exactly ${MASTER_KEY_BYTES} bytes`)
  }
  // Buffer.from(…, 'base64') silently skips bad characters, so validate the shape first.
  const unpadded = encoded.replace(/={1,2}$/, '')
  if (
    !/^[A-Za-z0-9+/]+$/.test(unpadded) ||
    unpadded.length % 4 === 1 ||
    (unpadded.length !== encoded.length && encoded.length % 4 !== 0)
  ) {
    throw new Error(
      `master key is not valid base64: expected base64 of exactly ${MASTER_KEY_BYTES} bytes`,
    )
  }
  const key = new Uint8Array(Buffer.from(encoded, 'base64'))
  if (key.length !== MASTER_KEY_BYTES) {
    throw new Error(
      `master key must be base64 of exactly ${MASTER_KEY_BYTES} bytes, got ${key.length} bytes`,
    )
  }
  return key
}

/** A fresh random 32-byte master key. */
export function generateMasterKey(): Uint8Array {
  return new Uint8Array(randomBytes(MASTER_KEY_BYTES))
}

/** The base64 form `parseMasterKey` reads, for writing a generated key to its file. */
export function encodeMasterKey(key: Uint8Array): string {
  if (key.length !== MASTER_KEY_BYTES) {
    throw new Error(`master key must be exactly ${MASTER_KEY_BYTES} bytes`)
  }
  return Buffer.from(key).toString('base64')
}
