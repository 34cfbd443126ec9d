import { createHash, createPrivateKey, createPublicKey, type KeyObject, sign, verify } from 'node:crypto'
import { decodeBase64, encodeBase64, hexOf } from './bytes.js'

/**
 * The keys of signed notes (c2sp.org/signed-note §Signatures, §Verifier keys): key names, key
 * IDs, vkeys, and Ed25519 keys from raw bytes. Key IDs, vkeys and skeys match
 * golang.org/x/mod/sumdb/note, so keys we print work with the Go tooling of the
 * transparency-log ecosystem (witnesses, monitors) and theirs work here.
 */

/** Signature type bytes (signed-note §Signature types) this folder knows. */
export const NOTE_TYPE_ED25519 = 0x01
export const NOTE_TYPE_COSIGNATURE_V1 = 0x04
export const NOTE_TYPE_MLDSA44_COSIGNATURE = 0x06

/** Key material length per type a vkey may carry here (all three use the spec's standard key ID). */
const KEY_LENGTHS: Readonly<Record<number, number>> = { 0x01: 32, 0x04: 32, 0x06: 1312 }

/** A malformed note, key, checkpoint or proof; `code` names the rule it broke. */
export class NoteFormatError extends Error {
  readonly code: string
  constructor(code: string, message: string) {
    super(message)
    this.name = 'NoteFormatError'
    this.code = code
  }
}

/**
 * Key names are non-empty, with no Unicode space (White_Space, as Go's unicode.IsSpace) and no
 * `+`; control characters are refused too, since no note can carry them.
 */
export function isValidKeyName(name: string): boolean {
  return name.length > 0 && !/[\p{White_Space}+\u0000-\u001f]|\p{Cs}/u.test(name)
}

/** SHA-256(name ‖ 0x0A ‖ type ‖ public key)[:4]: the key ID the spec recommends and Go computes. */
export function noteKeyId(name: string, type: number, publicKey: Uint8Array): Uint8Array {
  const digest = createHash('sha256').update(name, 'utf8').update(Uint8Array.of(0x0a, type)).update(publicKey).digest()
  return new Uint8Array(digest.subarray(0, 4))
}

// ---- Ed25519 from raw bytes: node:crypto takes DER, so the fixed RFC 8410 prefixes go in front.

const PKCS8_SEED_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex')
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex')

function privateKeyOf(seed: Uint8Array): KeyObject {
  if (seed.length !== 32) throw new NoteFormatError('invalid_key', 'an Ed25519 seed is 32 bytes')
  return createPrivateKey({ key: Buffer.concat([PKCS8_SEED_PREFIX, seed]), format: 'der', type: 'pkcs8' })
}

/** The 32-byte public key of a 32-byte seed. */
export function ed25519PublicKey(seed: Uint8Array): Uint8Array {
  const spki = createPublicKey(privateKeyOf(seed)).export({ format: 'der', type: 'spki' })
  return new Uint8Array(spki.subarray(spki.length - 32))
}

/** RFC 8032 Ed25519 (pure, deterministic) over `message`. */
export function ed25519Sign(seed: Uint8Array, message: Uint8Array): Uint8Array {
  return new Uint8Array(sign(null, message, privateKeyOf(seed)))
}

/** A verify function for a raw 32-byte public key, its KeyObject built once. Never throws when called. */
export function ed25519VerifyFunction(publicKey: Uint8Array): (message: Uint8Array, signature: Uint8Array) => boolean {
  let key: KeyObject
  try {
    if (publicKey.length !== 32) throw new RangeError('not 32 bytes')
    key = createPublicKey({ key: Buffer.concat([SPKI_PREFIX, publicKey]), format: 'der', type: 'spki' })
  } catch {
    throw new NoteFormatError('invalid_key', 'not an Ed25519 public key')
  }
  return (message, signature) => {
    if (signature.length !== 64) return false
    try {
      return verify(null, message, key, signature)
    } catch {
      return false
    }
  }
}

// ---- Keys as text.

/** A vkey, parsed: key name, 4-byte key ID, signature type, and key material. */
export interface VerifierKey {
  readonly name: string
  readonly keyId: Uint8Array
  readonly type: number
  readonly publicKey: Uint8Array
}

const typeHex = (type: number) => `0x${type.toString(16).padStart(2, '0')}`

/** `<name>+<hex key ID>+base64(type ‖ key)`. */
export function encodeVerifierKey(name: string, publicKey: Uint8Array, type: number = NOTE_TYPE_ED25519): string {
  if (!isValidKeyName(name)) throw new NoteFormatError('invalid_name', `invalid key name ${JSON.stringify(name)}`)
  if (publicKey.length !== KEY_LENGTHS[type]) throw new NoteFormatError('invalid_key', `a type ${typeHex(type)} key is ${KEY_LENGTHS[type] ?? 'not supported here'} bytes`)
  return `${name}+${hexOf(noteKeyId(name, type, publicKey))}+${encodeBase64(Uint8Array.of(type, ...publicKey))}`
}

/**
 * Parses a vkey of one of `types` (default: Ed25519 only). As Go's note.NewVerifier: the key ID
 * must match the name and key, and the key must have its type's length. Stricter in one way:
 * the key ID must be lowercase hex, as the spec's hex encoding is.
 */
export function parseVerifierKey(vkey: string, types: readonly number[] = [NOTE_TYPE_ED25519]): VerifierKey {
  const fail = (code: string, why: string) => new NoteFormatError(code, `vkey ${JSON.stringify(vkey.slice(0, 80))}: ${why}`)
  const first = vkey.indexOf('+')
  const second = first < 0 ? -1 : vkey.indexOf('+', first + 1)
  if (second < 0) throw fail('malformed_vkey', 'expected <name>+<key id>+<key>')
  const name = vkey.slice(0, first)
  const hex = vkey.slice(first + 1, second)
  const material = decodeBase64(vkey.slice(second + 1))
  if (!isValidKeyName(name)) throw fail('invalid_name', 'invalid key name')
  if (!/^[0-9a-f]{8}$/.test(hex)) throw fail('malformed_vkey', 'the key ID is not 8 lowercase hex digits')
  if (material === null || material.length < 1) throw fail('malformed_vkey', 'the key is not base64')
  const type = material[0]!
  const publicKey = material.slice(1)
  if (!types.includes(type)) throw fail('unsupported_key_type', `signature type ${typeHex(type)} is not accepted here`)
  if (publicKey.length !== KEY_LENGTHS[type]) throw fail('malformed_vkey', `a type ${typeHex(type)} key is ${KEY_LENGTHS[type] ?? 'not supported here'} bytes`)
  const keyId = noteKeyId(name, type, publicKey)
  if (hexOf(keyId) !== hex) throw fail('vkey_id_mismatch', 'the key ID does not match the name and key')
  return { name, keyId, type, publicKey }
}

/** An Ed25519 signing identity: the key name and the 32-byte seed. */
export interface NoteSigner {
  readonly name: string
  readonly seed: Uint8Array
}

export function noteSignerPublicKey(signer: NoteSigner): Uint8Array {
  return ed25519PublicKey(signer.seed)
}

/** Go's skey, `PRIVATE+KEY+<name>+<hex key ID>+base64(0x01 ‖ seed)`: a secret, for tests and tools. */
export function encodeSignerKey(signer: NoteSigner): string {
  if (!isValidKeyName(signer.name)) throw new NoteFormatError('invalid_name', `invalid key name ${JSON.stringify(signer.name)}`)
  const keyId = noteKeyId(signer.name, NOTE_TYPE_ED25519, noteSignerPublicKey(signer))
  return `PRIVATE+KEY+${signer.name}+${hexOf(keyId)}+${encodeBase64(Uint8Array.of(NOTE_TYPE_ED25519, ...signer.seed))}`
}

export function parseSignerKey(skey: string): NoteSigner {
  const parts = /^PRIVATE\+KEY\+([^+]*)\+([0-9a-f]{8})\+(.*)$/s.exec(skey)
  const material = parts ? decodeBase64(parts[3]!) : null
  if (!parts || !isValidKeyName(parts[1]!) || material?.length !== 33 || material[0] !== NOTE_TYPE_ED25519) {
    // The message does not echo the input: it is a secret.
    throw new NoteFormatError('malformed_skey', 'expected PRIVATE+KEY+<name>+<key id>+base64(0x01 ‖ 32-byte seed)')
  }
  const signer = { name: parts[1]!, seed: material.slice(1) }
  if (hexOf(noteKeyId(signer.name, NOTE_TYPE_ED25519, noteSignerPublicKey(signer))) !== parts[2]) {
    throw new NoteFormatError('vkey_id_mismatch', 'the skey key ID does not match its name and key')
  }
  return signer
}
