import { NoteFormatError, parseCheckpointBody, parseNote, type TlogCheckpoint } from '@hookledger/ledger'

/**
 * The body of a tlog-witness `add-checkpoint` request (c2sp.org/tlog-witness), parsed strictly
 * and with nothing verified:
 *
 *     old <size>\n
 *     <base64 hash>\n        (0 to 63 consistency proof lines)
 *     \n
 *     <checkpoint note>      (text, blank line, one or more signature lines)
 *
 * Every line ends in a newline; the old size is a decimal without leading zeroes that fits a
 * uint64; each proof line is the canonical base64 of exactly one 32-byte hash; the note is a
 * signed note (format only) whose text is a checkpoint. Anything else is the spec's "400 Bad
 * Request". Signatures, sizes and the proof are the decision's (witness-decision.ts).
 */

/** The spec: "The client MUST NOT send more than 63 consistency proof lines." */
export const MAX_CONSISTENCY_PROOF_LINES = 63

/**
 * The largest body accepted (bytes). The header is at most ~2.9 KB (an old size line and 63
 * proof lines of 45 bytes); the rest is the note, whose signature lines (at most 100, as Go's
 * note.Open) may include other witnesses' ML-DSA-44 cosignatures of ~3.3 KB each.
 */
export const MAX_ADD_CHECKPOINT_BODY_BYTES = 512 * 1024

/** The largest uint64: the spec's sizes are uint64, as in every tlog implementation. */
const MAX_UINT64 = 2n ** 64n - 1n

const OLD_SIZE_LINE = /^old (0|[1-9][0-9]{0,19})$/
/** Canonical standard base64 of 32 bytes: 43 characters, the last one with its two unused bits zero, then `=`. */
const HASH_LINE = /^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$/

export interface AddCheckpointRequest {
  /** The tree size of the previous checkpoint, as the client claims it. */
  readonly oldSize: bigint
  /** The consistency proof from `oldSize` to the checkpoint's size, as sent. */
  readonly proof: readonly Uint8Array[]
  /** The checkpoint note exactly as sent (text, blank line, signature lines). */
  readonly note: string
  /** Its text, parsed (origin, size, root, extension lines). */
  readonly checkpoint: TlogCheckpoint
}

export type AddCheckpointParse = { readonly ok: true; readonly request: AddCheckpointRequest } | { readonly ok: false; readonly reason: string }

const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/** Parses an add-checkpoint body (bytes as received, or already decoded text). Never throws. */
export function parseAddCheckpointRequest(body: string | Uint8Array): AddCheckpointParse {
  const fail = (reason: string): AddCheckpointParse => ({ ok: false, reason })
  const size = typeof body === 'string' ? Buffer.byteLength(body, 'utf8') : body.byteLength
  if (size > MAX_ADD_CHECKPOINT_BODY_BYTES) return fail(`the body is larger than ${MAX_ADD_CHECKPOINT_BODY_BYTES} bytes`)
  let text: string
  try {
    text = typeof body === 'string' ? body : decoder.decode(body)
  } catch {
    return fail('the body is not valid UTF-8')
  }
  // The header ends at the first empty line: the old size line and the proof lines have none.
  const split = text.indexOf('\n\n')
  if (split < 0) return fail('no empty line after the old size and proof lines')
  const [oldLine, ...proofLines] = text.slice(0, split).split('\n') as [string, ...string[]]
  const old = OLD_SIZE_LINE.exec(oldLine)
  if (old === null) return fail('the first line must be "old <size>", the size in decimal without leading zeroes')
  const oldSize = BigInt(old[1]!)
  if (oldSize > MAX_UINT64) return fail('the old size does not fit a uint64')
  if (proofLines.length > MAX_CONSISTENCY_PROOF_LINES) return fail(`more than ${MAX_CONSISTENCY_PROOF_LINES} consistency proof lines`)
  const proof: Uint8Array[] = []
  for (const [i, line] of proofLines.entries()) {
    if (!HASH_LINE.test(line)) return fail(`consistency proof line ${i + 1} is not the base64 of a 32-byte hash`)
    proof.push(new Uint8Array(Buffer.from(line, 'base64')))
  }
  const note = text.slice(split + 2)
  try {
    const parsed = parseNote(note)
    return { ok: true, request: { oldSize, proof, note, checkpoint: parseCheckpointBody(parsed.text) } }
  } catch (error) {
    if (error instanceof NoteFormatError) return fail(`the checkpoint note is malformed (${error.code}): ${error.message}`)
    throw error
  }
}
