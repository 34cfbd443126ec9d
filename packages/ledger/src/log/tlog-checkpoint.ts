import { boundedInteger, decodeBase64, encodeBase64, MAX_UINT64, parseDecimal } from './bytes.js'
import { NoteFormatError } from './note-keys.js'
import { hasOnlyNoteCharacters, type NoteVerifier, openNote, type OpenNoteOptions, type NoteSignature } from './signed-note.js'

/**
 * Checkpoints (c2sp.org/tlog-checkpoint): the note text of a log's signed tree head,
 *
 *     <origin>\n<tree size, decimal>\n<base64 of the 32-byte RFC 6962 root>\n[<extension>\n]…
 *
 * Parsed strictly: at least three lines, none empty; a size with no leading zeroes that fits a
 * uint64 (what every tlog implementation stores); a root of exactly 32 bytes in canonical base64.
 * The origin only has to be non-empty: the spec recommends a schema-less URL without spaces or
 * `+` but tells clients not to assume it, so neither side here enforces the recommendation.
 */

export interface CheckpointFields {
  readonly origin: string
  readonly size: bigint | number
  readonly root: Uint8Array
  readonly extensions?: readonly string[]
}

export interface TlogCheckpoint {
  readonly origin: string
  readonly size: bigint
  readonly root: Uint8Array
  readonly extensions: string[]
}

/** SHA-256 output, the RFC 6962 hash every line of a C2SP tlog carries. */
export const TLOG_HASH_BYTES = 32

/** A line of a checkpoint: non-empty, one line, note characters only. */
function isCheckpointLine(line: string): boolean {
  return line !== '' && !line.includes('\n') && hasOnlyNoteCharacters(line)
}

/** The checkpoint's note text; throws NoteFormatError on fields it could not parse back. */
export function checkpointBody(fields: CheckpointFields): string {
  if (!isCheckpointLine(fields.origin)) throw new NoteFormatError('invalid_origin', 'the origin must be one non-empty line')
  const size = boundedInteger(fields.size, MAX_UINT64)
  if (size === null) throw new NoteFormatError('invalid_tree_size', `tree size ${String(fields.size)} is not an integer in [0, 2^64)`)
  if (fields.root.length !== TLOG_HASH_BYTES) throw new NoteFormatError('invalid_root_hash', 'the root hash is 32 bytes')
  const extensions = fields.extensions ?? []
  if (!extensions.every(isCheckpointLine)) throw new NoteFormatError('invalid_extension', 'extension lines must be single non-empty lines')
  return [fields.origin, size.toString(), encodeBase64(fields.root), ...extensions].join('\n') + '\n'
}

/** Parses a checkpoint's note text (the signed text of the note, not the whole note). */
export function parseCheckpointBody(text: string): TlogCheckpoint {
  if (!text.endsWith('\n')) throw new NoteFormatError('malformed_checkpoint', 'a checkpoint ends in a newline')
  if (!hasOnlyNoteCharacters(text)) throw new NoteFormatError('malformed_checkpoint', 'a checkpoint is UTF-8 without control characters other than newline')
  const lines = text.slice(0, -1).split('\n')
  if (lines.length < 3) throw new NoteFormatError('malformed_checkpoint', 'a checkpoint has at least three lines: origin, tree size, root hash')
  const [origin, sizeLine, rootLine, ...extensions] = lines as [string, string, string, ...string[]]
  if (origin === '') throw new NoteFormatError('invalid_origin', 'the origin line is empty')
  const size = parseDecimal(sizeLine, MAX_UINT64)
  if (size === null) throw new NoteFormatError('invalid_tree_size', `tree size ${JSON.stringify(sizeLine.slice(0, 40))} is not a decimal in [0, 2^64) without leading zeroes`)
  const root = decodeBase64(rootLine)
  if (root === null || root.length !== TLOG_HASH_BYTES) throw new NoteFormatError('invalid_root_hash', 'the root hash line is not base64 of 32 bytes')
  if (extensions.some((line) => line === '')) throw new NoteFormatError('invalid_extension', 'extension lines must not be empty')
  return { origin, size, root, extensions }
}

export interface OpenedCheckpoint {
  readonly checkpoint: TlogCheckpoint
  /** The checkpoint's note text, as signed. */
  readonly text: string
  readonly signatures: NoteSignature[]
}

/** openNote, then parseCheckpointBody of its text. */
export function openCheckpoint(note: string | Uint8Array, verifiers: readonly NoteVerifier[], options?: OpenNoteOptions): OpenedCheckpoint {
  const opened = openNote(note, verifiers, options)
  return { checkpoint: parseCheckpointBody(opened.text), text: opened.text, signatures: opened.signatures }
}
