import { boundedInteger, decodeBase64, encodeBase64, MAX_UINT64, parseDecimal } from './bytes.js'
import { NoteFormatError } from './note-keys.js'
import { parseNote } from './signed-note.js'
import { parseCheckpointBody, type TlogCheckpoint, TLOG_HASH_BYTES } from './tlog-checkpoint.js'

/**
 * Offline proofs of logging (c2sp.org/tlog-proof, `.tlog-proof` files):
 *
 *     c2sp.org/tlog-proof@v1
 *     extra <base64>            (only when there is extra data)
 *     index <decimal>
 *     <base64 hash>             (the RFC 6962 inclusion proof, leaf's sibling first)
 *     …
 *                               (an empty line)
 *     <the checkpoint's signed note, verbatim>
 *
 * Parsing checks the format and the checkpoint's note structure; it verifies nothing (no key is
 * known here) and does not recompute the path. Two checks go beyond the letter of the format,
 * as no proof breaking them can ever verify: the index must be below the checkpoint's tree size,
 * and a proof has at most 64 hashes (the height of a uint64-sized tree). Every malformed input
 * throws NoteFormatError with a code; nothing else is thrown.
 */

export const TLOG_PROOF_HEADER = 'c2sp.org/tlog-proof@v1'

/** The longest RFC 6962 inclusion path in a tree of at most 2^64 - 1 leaves. */
export const MAX_TLOG_PROOF_HASHES = 64

export interface TlogProofFields {
  /** Opaque, unauthenticated application data; omitted when absent or empty. */
  readonly extra?: Uint8Array | null
  readonly index: bigint | number
  readonly proof: readonly Uint8Array[]
  /** The whole signed note of the checkpoint, as the log (and witnesses) signed it. */
  readonly checkpoint: string
}

export interface TlogProof {
  readonly extra: Uint8Array | null
  readonly index: bigint
  readonly proof: Uint8Array[]
  readonly checkpoint: string
  /** The checkpoint's parsed body: its signatures still need openNote with trusted keys. */
  readonly body: TlogCheckpoint
}

/** The checkpoint note's body, parsed; its index bound checked. */
function checkpointFor(note: string, index: bigint): TlogCheckpoint {
  const body = parseCheckpointBody(parseNote(note).text)
  if (index >= body.size) throw new NoteFormatError('index_out_of_range', `index ${index.toString()} is not below the tree size ${body.size.toString()}`)
  return body
}

export function formatTlogProof(fields: TlogProofFields): string {
  const index = boundedInteger(fields.index, MAX_UINT64)
  if (index === null) throw new NoteFormatError('invalid_index', `index ${String(fields.index)} is not an integer in [0, 2^64)`)
  if (fields.proof.length > MAX_TLOG_PROOF_HASHES) throw new NoteFormatError('too_many_proof_hashes', `at most ${MAX_TLOG_PROOF_HASHES} proof hashes`)
  if (fields.proof.some((hash) => hash.length !== TLOG_HASH_BYTES)) throw new NoteFormatError('invalid_proof_hash', 'each proof hash is 32 bytes')
  checkpointFor(fields.checkpoint, index)
  const lines = [TLOG_PROOF_HEADER]
  if (fields.extra && fields.extra.length > 0) lines.push(`extra ${encodeBase64(fields.extra)}`)
  lines.push(`index ${index.toString()}`, ...fields.proof.map(encodeBase64))
  return `${lines.join('\n')}\n\n${fields.checkpoint}`
}

const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

export function parseTlogProof(input: string | Uint8Array): TlogProof {
  let text: string
  try {
    text = typeof input === 'string' ? input : decoder.decode(input)
  } catch {
    throw new NoteFormatError('malformed_proof', 'a proof is UTF-8 text')
  }
  // Every line before the checkpoint is non-empty, so the first empty line ends them.
  const split = text.indexOf('\n\n')
  if (split < 0) throw new NoteFormatError('malformed_proof', 'no empty line before the checkpoint')
  const head = text.slice(0, split).split('\n')
  const checkpoint = text.slice(split + 2)
  if (head[0] !== TLOG_PROOF_HEADER) throw new NoteFormatError('invalid_proof_header', `the first line must be ${TLOG_PROOF_HEADER}`)
  let at = 1
  let extra: Uint8Array | null = null
  if (head[at]?.startsWith('extra ')) {
    extra = decodeBase64(head[at]!.slice('extra '.length))
    // An empty payload would mean no extra data, whose line the spec says is omitted.
    if (extra === null || extra.length === 0) throw new NoteFormatError('invalid_extra', 'the extra line is not base64 of some data')
    at++
  }
  const indexLine = head[at] ?? ''
  const index = indexLine.startsWith('index ') ? parseDecimal(indexLine.slice('index '.length), MAX_UINT64) : null
  if (index === null) throw new NoteFormatError('invalid_index', 'expected "index <decimal without leading zeroes>"')
  const hashLines = head.slice(at + 1)
  if (hashLines.length > MAX_TLOG_PROOF_HASHES) throw new NoteFormatError('too_many_proof_hashes', `more than ${MAX_TLOG_PROOF_HASHES} proof hashes`)
  const proof = hashLines.map((line, i) => {
    const hash = decodeBase64(line)
    if (hash === null || hash.length !== TLOG_HASH_BYTES) throw new NoteFormatError('invalid_proof_hash', `proof line ${i + 1} is not base64 of 32 bytes`)
    return hash
  })
  return { extra, index, proof, checkpoint, body: checkpointFor(checkpoint, index) }
}
