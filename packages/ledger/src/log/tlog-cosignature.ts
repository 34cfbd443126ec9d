import { boundedInteger, concatBytes, utf8 } from './bytes.js'
import {
  ed25519PublicKey,
  ed25519Sign,
  ed25519VerifyFunction,
  encodeVerifierKey,
  NOTE_TYPE_COSIGNATURE_V1,
  NoteFormatError,
  type NoteSigner,
  noteKeyId,
  parseVerifierKey,
  type VerifierKey,
} from './note-keys.js'
import { type NoteSignature, noteSignatureLine, type NoteVerifier } from './signed-note.js'
import { parseCheckpointBody } from './tlog-checkpoint.js'

/**
 * Ed25519 checkpoint cosignatures (c2sp.org/tlog-cosignature, `cosignature/v1`, signature type
 * 0x04): a note signature line whose signature is `u64 timestamp (big-endian) ‖ Ed25519(m)`, with
 *
 *     m = "cosignature/v1\ntime <timestamp>\n" ‖ the whole checkpoint body
 *
 * Key IDs use type 0x04, and so do witness vkeys (the spec: "vkeys with signature type 0x04").
 * The message does not commit to the cosigner's name, so one key must never serve two cosigners.
 */

/** The spec's bound: a timestamp MUST NOT exceed 2^63 - 1. */
export const MAX_COSIGNATURE_TIMESTAMP = 2n ** 63n - 1n

/** Timestamp (8 bytes) and Ed25519 signature (64 bytes). */
const COSIGNATURE_BYTES = 72

/** The signed message of a cosignature/v1 over `body` at `timestamp` (POSIX seconds). */
export function cosignatureMessage(body: string, timestamp: bigint | number): string {
  const t = boundedInteger(timestamp, MAX_COSIGNATURE_TIMESTAMP)
  if (t === null) throw new NoteFormatError('invalid_timestamp', `timestamp ${String(timestamp)} is not an integer in [0, 2^63)`)
  return `cosignature/v1\ntime ${t.toString()}\n${body}`
}

/** SHA-256(name ‖ 0x0A ‖ 0x04 ‖ public key)[:4]. */
export function cosignerKeyId(name: string, publicKey: Uint8Array): Uint8Array {
  return noteKeyId(name, NOTE_TYPE_COSIGNATURE_V1, publicKey)
}

/** A witness's vkey: `<name>+<hex key ID>+base64(0x04 ‖ public key)`. */
export function encodeCosignerKey(name: string, publicKey: Uint8Array): string {
  return encodeVerifierKey(name, publicKey, NOTE_TYPE_COSIGNATURE_V1)
}

/** A witness's vkey for a signer, from its seed. */
export function cosignerVerifierKey(witness: NoteSigner): string {
  return encodeCosignerKey(witness.name, ed25519PublicKey(witness.seed))
}

/**
 * The cosignature line (`— <name> base64(key ID ‖ timestamp ‖ signature)\n`) of `witness` on a
 * checkpoint body, to append to the checkpoint's note (addNoteSignatures). Refuses a body that
 * is not a checkpoint: a cosignature states the log's consistency, so only checkpoints get one.
 */
export function cosignCheckpoint(body: string, witness: NoteSigner, timestampSeconds: bigint | number): string {
  parseCheckpointBody(body)
  const message = cosignatureMessage(body, timestampSeconds)
  const stamp = Buffer.alloc(8)
  stamp.writeBigUInt64BE(BigInt(timestampSeconds))
  const signature = ed25519Sign(witness.seed, utf8(message))
  return noteSignatureLine(witness.name, cosignerKeyId(witness.name, ed25519PublicKey(witness.seed)), concatBytes(stamp, signature))
}

/** A verifier of cosignature/v1 signatures, for openNote; the timestamp it checked is read with cosignatureTimestamp. */
export interface CosignatureVerifier extends NoteVerifier {
  readonly type: typeof NOTE_TYPE_COSIGNATURE_V1
  readonly publicKey: Uint8Array
}

export interface CosignatureVerifierOptions {
  /** Fail cosignatures timestamped after this (POSIX seconds): the spec lets verifiers refuse future ones. */
  readonly maxTimestamp?: bigint | number
}

/** The timestamp at the front of a cosignature's bytes (after the key ID), or null if they are not 72 bytes. */
export function cosignatureBytesTimestamp(signature: Uint8Array): bigint | null {
  if (signature.length !== COSIGNATURE_BYTES) return null
  return Buffer.from(signature.buffer, signature.byteOffset, 8).readBigUInt64BE(0)
}

/** A verifier for a witness's vkey (type 0x04), to pass to openNote beside the log's. */
export function cosignatureVerifier(vkey: string | VerifierKey, options: CosignatureVerifierOptions = {}): CosignatureVerifier {
  const key = typeof vkey === 'string' ? parseVerifierKey(vkey, [NOTE_TYPE_COSIGNATURE_V1]) : vkey
  if (key.type !== NOTE_TYPE_COSIGNATURE_V1) throw new NoteFormatError('unsupported_key_type', 'not a cosignature/v1 (0x04) key')
  const check = ed25519VerifyFunction(key.publicKey)
  const latest = options.maxTimestamp === undefined ? MAX_COSIGNATURE_TIMESTAMP : BigInt(options.maxTimestamp)
  return {
    name: key.name,
    keyId: key.keyId,
    type: NOTE_TYPE_COSIGNATURE_V1,
    publicKey: key.publicKey,
    verify(text, signature) {
      const timestamp = cosignatureBytesTimestamp(signature)
      if (timestamp === null || timestamp > MAX_COSIGNATURE_TIMESTAMP || timestamp > latest) return false
      const header = utf8(`cosignature/v1\ntime ${timestamp.toString()}\n`)
      return check(concatBytes(header, text), signature.subarray(8))
    },
  }
}

/** The timestamp of a signature line a cosignature verifier verified in openNote; null for any other line. */
export function cosignatureTimestamp(signature: NoteSignature): bigint | null {
  if (signature.verified !== true || signature.verifier?.type !== NOTE_TYPE_COSIGNATURE_V1) return null
  return cosignatureBytesTimestamp(signature.bytes)
}
