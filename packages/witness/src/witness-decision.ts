import {
  cosignatureVerifier,
  cosignCheckpoint,
  ed25519NoteVerifier,
  edgeRoot,
  EMPTY_TREE_EDGE,
  NOTE_TYPE_COSIGNATURE_V1,
  NOTE_TYPE_ED25519,
  NoteFormatError,
  type NoteSigner,
  type NoteVerifier,
  openNote,
  parseVerifierKey,
  verifyConsistency,
} from '@hookledger/ledger'
import type { AddCheckpointRequest } from './add-checkpoint-request.js'

/**
 * What a witness answers an add-checkpoint request (c2sp.org/tlog-witness), decided without
 * I/O from the logs it trusts, what it last cosigned for the checkpoint's origin, and the time.
 * The checks run in the spec's order:
 *
 *   404  the origin is not a log this witness knows
 *   403  no signature of a key trusted for the origin, or a signature line of such a key fails
 *   400  the old size is larger than the checkpoint's size
 *   409  the old size is not the size last cosigned for the origin (0 if none); the body is that
 *        size in decimal and a newline, `Content-Type: text/x.tlog.size`
 *   422  a checkpoint of size 0 whose root is not the empty tree's; a proof with old size 0; the
 *        same size with another root; a consistency proof that does not verify
 *   200  the cosignature line(s), and the state to persist BEFORE answering
 *
 * A checkpoint smaller than the stored one never gets past 400 or 409 (old ≤ size, old = stored).
 * Sizes past 2^53 − 1 cannot be checked here (the tree code counts in safe integers): a proof
 * to one is refused with 422, as one that does not verify, so the witness never cosigns a tree
 * it could not check.
 */

/** What the witness keeps per log: the latest checkpoint it cosigned. */
export interface WitnessLogState {
  readonly size: number
  readonly root: Uint8Array
  /**
   * That checkpoint as a note: its text, the log signatures the witness verified, and the
   * witness's own cosignature (what a monitor fetches). Absent in state written without it.
   */
  readonly checkpoint?: string
}

/** The logs a witness trusts: origin → the verifiers of its keys (whose key name is the origin). */
export type WitnessKnownLogs = ReadonlyMap<string, readonly NoteVerifier[]>

export const CONTENT_TYPE_TEXT = 'text/plain; charset=utf-8'
/** The spec's content type of a 409's body. */
export const CONTENT_TYPE_TLOG_SIZE = 'text/x.tlog.size'

/** Why a request was refused, one code per rule. */
export type WitnessRefusal =
  | 'malformed_request'
  | 'unknown_origin'
  | 'unverified_checkpoint'
  | 'old_size_too_large'
  | 'old_size_mismatch'
  | 'bad_empty_tree'
  | 'proof_with_old_size_zero'
  | 'root_mismatch'
  | 'bad_consistency_proof'
  | 'clock_before_epoch'

export type WitnessAnswer =
  | {
      readonly status: 200
      readonly contentType: string
      /** One cosignature line per witness key, each ending in a newline. */
      readonly body: string
      /** The state to persist for the origin before the answer is sent. */
      readonly state: WitnessLogState
      readonly origin: string
    }
  | {
      readonly status: 400 | 403 | 404 | 409 | 422 | 500
      readonly contentType: string
      readonly body: string
      readonly reason: WitnessRefusal
      /**
       * True when the checkpoint was validly signed by the log but fails a consistency check:
       * the spec lets the witness keep such requests, as they may prove the log misbehaved.
       */
      readonly evidence: boolean
    }

export interface WitnessDecisionInput {
  readonly logs: WitnessKnownLogs
  /** What the witness last cosigned for the request's origin, or null if it never did. */
  readonly state: WitnessLogState | null
  readonly request: AddCheckpointRequest
  /** The witness's key. */
  readonly witness: NoteSigner
  /** When the answer is made: the cosignature's timestamp is its POSIX seconds. */
  readonly now: Date
}

/** Log keys a witness can check: Ed25519 notes (0x01, hookledger's) and cosignature/v1-type keys (0x04). */
const LOG_KEY_TYPES = [NOTE_TYPE_ED25519, NOTE_TYPE_COSIGNATURE_V1]

/**
 * The known logs from vkeys (`<origin>+<key id>+<key>`): a log's origin is its key's name, and a
 * log may have several keys. Throws NoteFormatError on a malformed vkey or one given twice.
 */
export function witnessKnownLogs(vkeys: readonly string[]): WitnessKnownLogs {
  const logs = new Map<string, NoteVerifier[]>()
  const seen = new Set<string>()
  for (const vkey of vkeys) {
    const key = parseVerifierKey(vkey, LOG_KEY_TYPES)
    const id = `${key.name}+${Buffer.from(key.keyId).toString('hex')}`
    if (seen.has(id)) throw new NoteFormatError('duplicate_log_key', `the log key ${id} is given twice`)
    seen.add(id)
    const verifier = key.type === NOTE_TYPE_ED25519 ? ed25519NoteVerifier(key) : cosignatureVerifier(key)
    logs.set(key.name, [...(logs.get(key.name) ?? []), verifier])
  }
  return logs
}

/** MTH of the empty tree (SHA-256 of nothing). */
const EMPTY_ROOT = edgeRoot(EMPTY_TREE_EDGE)

const sameHash = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i])

function refuse(status: 400 | 403 | 404 | 422 | 500, reason: WitnessRefusal, message: string, evidence = false): WitnessAnswer {
  return { status, contentType: CONTENT_TYPE_TEXT, body: `${message}\n`, reason, evidence }
}

/** The answer to an add-checkpoint request already parsed (parseAddCheckpointRequest). */
export function decideAddCheckpoint(input: WitnessDecisionInput): WitnessAnswer {
  const { request, state } = input
  const { checkpoint } = request
  const verifiers = input.logs.get(checkpoint.origin)
  if (verifiers === undefined) return refuse(404, 'unknown_origin', `unknown log origin ${JSON.stringify(checkpoint.origin.slice(0, 200))}`)

  let logSignatures: string[]
  try {
    // Unknown keys are ignored; a trusted key's failing signature, or none at all, refuses.
    const opened = openNote(request.note, verifiers)
    logSignatures = opened.signatures.filter((s) => s.verified === true).map((s) => s.line)
  } catch (error) {
    if (!(error instanceof NoteFormatError)) throw error
    if (error.code === 'bad_signature') return refuse(403, 'unverified_checkpoint', 'a signature of a trusted log key does not verify')
    if (error.code === 'unverified_note') return refuse(403, 'unverified_checkpoint', 'no signature of a trusted log key for this origin')
    return refuse(400, 'malformed_request', `the checkpoint note is malformed (${error.code})`)
  }

  const newSize = checkpoint.size
  if (request.oldSize > newSize) return refuse(400, 'old_size_too_large', `old size ${request.oldSize} is larger than the checkpoint's size ${newSize}`)

  const storedSize = BigInt(state?.size ?? 0)
  if (request.oldSize !== storedSize) {
    return { status: 409, contentType: CONTENT_TYPE_TLOG_SIZE, body: `${storedSize}\n`, reason: 'old_size_mismatch', evidence: false }
  }

  // The checks below all concern the log's consistency: a failure is signed evidence.
  if (newSize === 0n && !sameHash(checkpoint.root, EMPTY_ROOT)) {
    return refuse(422, 'bad_empty_tree', 'a checkpoint of size 0 must have the root hash of the empty tree', true)
  }
  if (storedSize === 0n && request.proof.length > 0) {
    return refuse(422, 'proof_with_old_size_zero', 'the consistency proof must be empty when the old size is 0', true)
  }
  const oldRoot = state?.root ?? EMPTY_ROOT
  if (storedSize === newSize && !sameHash(oldRoot, checkpoint.root)) {
    return refuse(422, 'root_mismatch', `the checkpoint has size ${newSize}, as the one last cosigned, but another root hash`, true)
  }
  const safe = newSize <= BigInt(Number.MAX_SAFE_INTEGER)
  if (!safe || !verifyConsistency(Number(storedSize), Number(newSize), request.proof, oldRoot, checkpoint.root)) {
    return refuse(422, 'bad_consistency_proof', `the consistency proof from size ${storedSize} to ${newSize} does not verify`, true)
  }

  const timestamp = Math.floor(input.now.getTime() / 1000)
  // The spec: the timestamp MUST NOT be zero.
  if (!(timestamp >= 1)) return refuse(500, 'clock_before_epoch', 'the witness clock is not after 1970-01-01T00:00:00Z')
  const text = request.note.slice(0, request.note.lastIndexOf('\n\n') + 1)
  const cosignature = cosignCheckpoint(text, input.witness, timestamp)
  const note = `${text}\n${logSignatures.map((line) => `${line}\n`).join('')}${cosignature}`
  return {
    status: 200,
    contentType: CONTENT_TYPE_TEXT,
    body: cosignature,
    origin: checkpoint.origin,
    state: { size: Number(newSize), root: Uint8Array.from(checkpoint.root), checkpoint: note },
  }
}
