import { checkpointBody, ed25519NoteVerifier, encodeVerifierKey, openNote, parseVerifierKey, signNote } from '../log/index.js'
import { parseLedgerPublicKey, type LedgerSigningKey } from './ledger-checkpoint.js'

/**
 * The log's signed tree heads: C2SP checkpoints (`<origin>\n<size>\n<base64 root>\n`) signed as
 * signed notes by the ledger's own Ed25519 key, whose key name is the log's origin. The same key
 * signs our own checkpoint record beside each note (sequence, time, snapshot descriptor).
 */

/** A stored note and the checkpoint that carries it. */
export interface TreeNote {
  readonly seq: number
  readonly size: number
  /** The whole signed note, as served at `/log/checkpoint`. */
  readonly note: string
}

/** The signed text of a note: everything before the blank line that starts its signatures. */
export function noteText(note: string): string {
  const end = note.indexOf('\n\n')
  if (end < 0) throw new RangeError('not a signed note: no blank line before its signatures')
  return note.slice(0, end + 1)
}

/** The 32-byte Ed25519 seed of a signing key (what a signed note's signer needs). */
function seedOf(key: LedgerSigningKey): Uint8Array {
  const jwk = key.privateKey.export({ format: 'jwk' })
  return new Uint8Array(Buffer.from(jwk.d!, 'base64url'))
}

/** The note of the tree of `size` leaves with `root`, signed by `key` under the log's origin. */
export function signTreeNote(key: LedgerSigningKey, origin: string, size: number, root: Uint8Array): string {
  return signNote(checkpointBody({ origin, size, root }), [{ name: origin, seed: seedOf(key) }])
}

/** The log's verifier key (`vkey`): `<origin>+<key id>+<base64(0x01 ‖ key)>`, for any note verifier. */
export function ledgerVerifierKey(origin: string, publicKey: string): string {
  return encodeVerifierKey(origin, parseLedgerPublicKey(publicKey))
}

/** Whether a note carries a valid signature of `publicKey` (`hlpk_…`) under `origin`. False on anything malformed. */
export function treeNoteVerifier(origin: string, publicKey: string): (note: string) => boolean {
  const verifier = ed25519NoteVerifier(ledgerVerifierKey(origin, publicKey))
  return (note) => {
    try {
      return openNote(note, [verifier]).signatures.some((s) => s.verified === true)
    } catch {
      return false
    }
  }
}

/** A trusted ledger key as given on a command line: `hlpk_…`, or the log's vkey (which also names its origin). */
export interface GivenLedgerKey {
  readonly publicKey: Uint8Array
  /** The log's origin, when the key was given as a vkey. */
  readonly origin: string | null
}

/** Reads `hlpk_…` or `<origin>+<key id>+<base64 key>`. Throws on anything else. */
export function parseGivenLedgerKey(text: string): GivenLedgerKey {
  const trimmed = text.trim()
  if (trimmed.startsWith('hlpk_')) return { publicKey: parseLedgerPublicKey(trimmed), origin: null }
  const vkey = parseVerifierKey(trimmed)
  return { publicKey: vkey.publicKey, origin: vkey.name }
}

/** `hlpk_…` of raw public key bytes. */
export function ledgerPublicKeyText(publicKey: Uint8Array): string {
  return 'hlpk_' + Buffer.from(publicKey).toString('base64url')
}
