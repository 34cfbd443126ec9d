import { concatBytes, decodeBase64, encodeBase64, hexOf, sameBytes, utf8 } from './bytes.js'
import {
  ed25519Sign,
  ed25519VerifyFunction,
  isValidKeyName,
  NOTE_TYPE_ED25519,
  NoteFormatError,
  type NoteSigner,
  noteKeyId,
  noteSignerPublicKey,
  parseVerifierKey,
  type VerifierKey,
} from './note-keys.js'

export * from './note-keys.js'

/**
 * Signed notes (c2sp.org/signed-note): a UTF-8 text ending in a newline, a blank line, then one
 * or more lines `— <key name> base64(key ID ‖ signature)`. The parsing rules are the spec's, as
 * golang.org/x/mod/sumdb/note implements them: the text ends at the LAST blank line, unknown
 * keys are ignored, a known key's failing signature rejects the note, and a note no known key
 * verified is rejected.
 */

/** Go's note.Open refuses more signature lines than this; the spec asks for at least 16. */
export const MAX_NOTE_SIGNATURES = 100

const SIGNATURE_PREFIX = '\u2014 ' // em dash, space

/** Control characters other than newline, and lone surrogates (which have no UTF-8). */
const BAD_NOTE_CHARACTER = /[\u0000-\u0009\u000b-\u001f]|\p{Cs}/u

/** Signed-note §Format: valid UTF-8, no ASCII control character but newline. */
export function hasOnlyNoteCharacters(text: string): boolean {
  return !BAD_NOTE_CHARACTER.test(text)
}

/** A note text as `signNote` accepts it: the spec's characters, ending in a newline. */
export function checkNoteText(text: string): void {
  if (!text.endsWith('\n')) throw new NoteFormatError('invalid_text', 'a note text must end in a newline')
  if (!hasOnlyNoteCharacters(text)) throw new NoteFormatError('invalid_text', 'a note text must be UTF-8 without control characters other than newline')
}

/**
 * What `openNote` checks a signature line against, found by name and key ID. `verify` gets the
 * UTF-8 note text and the signature bytes after the key ID, so cosignature verifiers (whose
 * signature carries the timestamp the message needs) fit the same list.
 */
export interface NoteVerifier {
  readonly name: string
  readonly keyId: Uint8Array
  /** The signature type byte, when known (0x01, 0x04 …). */
  readonly type?: number
  verify(text: Uint8Array, signature: Uint8Array): boolean
}

/** A verifier of plain Ed25519 note signatures (type 0x01). */
export function ed25519NoteVerifier(vkey: string | VerifierKey): NoteVerifier {
  const key = typeof vkey === 'string' ? parseVerifierKey(vkey) : vkey
  if (key.type !== NOTE_TYPE_ED25519) throw new NoteFormatError('unsupported_key_type', 'not an Ed25519 (0x01) key')
  return { name: key.name, keyId: key.keyId, type: NOTE_TYPE_ED25519, verify: ed25519VerifyFunction(key.publicKey) }
}

/** `— <name> base64(key ID ‖ signature)\n`. */
export function noteSignatureLine(name: string, keyId: Uint8Array, signature: Uint8Array): string {
  if (!isValidKeyName(name)) throw new NoteFormatError('invalid_name', `invalid key name ${JSON.stringify(name)}`)
  if (keyId.length !== 4 || signature.length < 1) throw new NoteFormatError('malformed_signature_line', 'a key ID is 4 bytes and a signature is not empty')
  return `${SIGNATURE_PREFIX}${name} ${encodeBase64(concatBytes(keyId, signature))}\n`
}

/** Signs `text` with each signer (Ed25519, type 0x01): the text, a blank line, one line per signer. */
export function signNote(text: string, signers: readonly NoteSigner[]): string {
  checkNoteText(text)
  if (signers.length === 0) throw new NoteFormatError('no_signatures', 'a note needs at least one signature')
  if (signers.length > MAX_NOTE_SIGNATURES) throw new NoteFormatError('too_many_signatures', `at most ${MAX_NOTE_SIGNATURES} signatures`)
  const message = utf8(text)
  const seen = new Set<string>()
  let lines = ''
  for (const signer of signers) {
    if (!isValidKeyName(signer.name)) throw new NoteFormatError('invalid_name', `invalid key name ${JSON.stringify(signer.name)}`)
    const keyId = noteKeyId(signer.name, NOTE_TYPE_ED25519, noteSignerPublicKey(signer))
    const id = `${signer.name}+${hexOf(keyId)}`
    if (seen.has(id)) throw new NoteFormatError('duplicate_signer', `${id} signs twice`)
    seen.add(id)
    lines += noteSignatureLine(signer.name, keyId, ed25519Sign(signer.seed, message))
  }
  return `${text}\n${lines}`
}

/** One signature line of an opened note. */
export interface NoteSignature {
  readonly name: string
  readonly keyId: Uint8Array
  /** The signature after the key ID (what a verifier checks). */
  readonly bytes: Uint8Array
  /** The line as written, without its newline. */
  readonly line: string
  /** true or false when a verifier matched name and key ID; null when none did (an unknown key, ignored). */
  readonly verified: boolean | null
  /** The verifier that matched, if any (cosignature timestamps are read through it). */
  readonly verifier: NoteVerifier | null
}

export interface OpenedNote {
  /** The signed text, final newline included, separating blank line not. */
  readonly text: string
  /** Every signature line, in order, duplicates included. */
  readonly signatures: NoteSignature[]
}

export interface OpenNoteOptions {
  /** Refuse a note no known key verified (`unverified_note`); default true, as the spec requires. */
  readonly requireVerified?: boolean
  /** Refuse a note a known key's signature fails on (`bad_signature`); default true. When false it is reported `verified: false`. */
  readonly rejectBadSignatures?: boolean
}

const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

function noteString(note: string | Uint8Array): string {
  if (typeof note === 'string') return note
  try {
    return decoder.decode(note)
  } catch {
    throw new NoteFormatError('malformed_note', 'a note must be valid UTF-8')
  }
}

function parseSignatureLine(line: string): Omit<NoteSignature, 'verified' | 'verifier'> {
  const fail = (why: string) => new NoteFormatError('malformed_signature_line', `signature line ${JSON.stringify(line.slice(0, 80))}: ${why}`)
  if (!line.startsWith(SIGNATURE_PREFIX)) throw fail('does not start with an em dash (U+2014) and a space')
  const rest = line.slice(SIGNATURE_PREFIX.length)
  const space = rest.indexOf(' ')
  if (space < 0) throw fail('expected a key name, a space and a base64 signature')
  const name = rest.slice(0, space)
  const raw = decodeBase64(rest.slice(space + 1))
  if (!isValidKeyName(name)) throw fail('invalid key name')
  if (raw === null || raw.length < 5) throw fail('the signature is not base64 of a key ID and a signature')
  return { name, keyId: raw.slice(0, 4), bytes: raw.slice(4), line }
}

/** Text and signature lines, structure checked, nothing verified. */
function splitNote(note: string): { text: string; lines: ReturnType<typeof parseSignatureLine>[] } {
  if (!hasOnlyNoteCharacters(note)) throw new NoteFormatError('malformed_note', 'a note must be UTF-8 without control characters other than newline')
  const split = note.lastIndexOf('\n\n')
  if (split < 0) throw new NoteFormatError('malformed_note', 'no blank line before the signatures')
  const block = note.slice(split + 2)
  if (block === '' || !block.endsWith('\n')) throw new NoteFormatError('malformed_note', 'the signatures must be one or more lines, each ending in a newline')
  const lines = block.slice(0, -1).split('\n')
  if (lines.length > MAX_NOTE_SIGNATURES) throw new NoteFormatError('too_many_signatures', `more than ${MAX_NOTE_SIGNATURES} signatures`)
  return { text: note.slice(0, split + 1), lines: lines.map(parseSignatureLine) }
}

/**
 * Opens a note: checks its format, then each signature line whose name and key ID match a
 * verifier (every such line, repeats included). Lines of unknown keys come back `verified: null`.
 * Two verifiers with one name and key ID are ambiguous (`ambiguous_verifier`), as in Go.
 */
export function openNote(note: string | Uint8Array, verifiers: readonly NoteVerifier[], options: OpenNoteOptions = {}): OpenedNote {
  const { text, lines } = splitNote(noteString(note))
  const message = utf8(text)
  const signatures = lines.map((line): NoteSignature => {
    const matches = verifiers.filter((v) => v.name === line.name && sameBytes(v.keyId, line.keyId))
    if (matches.length > 1) throw new NoteFormatError('ambiguous_verifier', `more than one verifier for ${line.name}`)
    const verifier = matches[0] ?? null
    const verified = verifier === null ? null : verifier.verify(message, line.bytes)
    if (verified === false && options.rejectBadSignatures !== false) {
      throw new NoteFormatError('bad_signature', `the signature of ${line.name} does not verify`)
    }
    return { ...line, verified, verifier }
  })
  if (options.requireVerified !== false && !signatures.some((s) => s.verified === true)) {
    throw new NoteFormatError('unverified_note', 'no signature of a known key')
  }
  return { text, signatures }
}

/** A note's text and signature lines, format checked, no signature verified (for logs and relays). */
export function parseNote(note: string | Uint8Array): OpenedNote {
  return openNote(note, [], { requireVerified: false })
}

/**
 * Appends signature lines (a witness's response body, or lines one by one) to a note, skipping
 * lines the note already has word for word. Both the note and the lines are checked first.
 */
export function addNoteSignatures(note: string, lines: string | readonly string[]): string {
  const present = parseNote(note).signatures
  const existing = new Set(present.map((s) => s.line))
  let count = present.length
  let added: string[]
  if (typeof lines === 'string') {
    if (lines !== '' && !lines.endsWith('\n')) throw new NoteFormatError('malformed_signature_line', 'signature lines must each end in a newline')
    added = lines === '' ? [] : lines.slice(0, -1).split('\n')
  } else {
    added = lines.map((l) => (l.endsWith('\n') ? l.slice(0, -1) : l))
  }
  let out = note
  for (const line of added) {
    if (!hasOnlyNoteCharacters(line) || line.includes('\n')) throw new NoteFormatError('malformed_signature_line', 'one signature per line')
    parseSignatureLine(line)
    if (existing.has(line)) continue
    existing.add(line)
    if (++count > MAX_NOTE_SIGNATURES) throw new NoteFormatError('too_many_signatures', `more than ${MAX_NOTE_SIGNATURES} signatures`)
    out += `${line}\n`
  }
  return out
}
