import {
  type ChainRowRef,
  CHECKPOINT_GENESIS_HASH,
  checkpointHash,
  type LedgerCheckpoint,
  ledgerKeyId,
  verifyCheckpointSignature,
} from './ledger-checkpoint.js'
import { type LedgerKeyHandOver, ledgerKeysTrustedFrom, type TrustedLedgerKey } from './ledger-key-rotation.js'
import {
  CHAIN_GENESIS,
  type ChainRow,
  ledgerLeafHashAt,
  ledgerRowBytes,
} from './ledger-row-encoding.js'
import type { ChainProblem, SealedLeaves } from './ledger-chain-problem.js'
import { CANONICAL_DECIMAL, CheckpointSegment, HEX_32, leafFindings, messageOf, sealedLeavesOf } from './ledger-checkpoint-segment.js'

export type { ChainProblem, ChainProblemKind, SealedLeaves } from './ledger-chain-problem.js'

/** What the verifier remembers of the checkpoint pushed last. */
interface PreviousCheckpoint {
  readonly seq: number
  readonly hash: string | null
  readonly total: number
  readonly last: unknown
}

/** The outcome of LedgerChainVerifier#finish. */
export interface ChainVerification {
  readonly ok: boolean
  /** Every row pushed. */
  readonly rows: number
  /** Rows pushed within some checkpoint's range, so checked against it. */
  readonly sealedRows: number
  /** Rows after the last checkpoint's last row: counted, not checked. */
  readonly unsealedRows: number
  readonly checkpoints: number
  /** Of those, checkpoints checked without their rows (pushHeader: archived, or before a snapshot). */
  readonly headerOnly: number
  /** The first `maxProblems` findings, checkpoint by checkpoint, rows by position. */
  readonly problems: ChainProblem[]
  readonly problemsOmitted: number
  /** The lowest position any finding names, omitted ones included. */
  readonly firstBadPosition: string | null
}

export interface LedgerChainVerifierOptions {
  /** Raw 32-byte Ed25519 public key (parseLedgerPublicKey). */
  readonly publicKey: Uint8Array
  /**
   * Verified hand-overs (ledger-key-rotation.ts): a checkpoint signed by a key they lead to from
   * `publicKey` verifies too, unless a checkpoint before it was signed by a later key already.
   */
  readonly handOvers?: readonly LedgerKeyHandOver[]
  /** Findings kept in full (default 1000); the rest are only counted. */
  readonly maxProblems?: number
}

const DEFAULT_MAX_PROBLEMS = 1000

/**
 * Checks a ledger against its signed checkpoints one row at a time, holding at most one
 * checkpoint's worth of state, so the same code runs over the database and over an export.
 *
 * Interleaving contract. The caller pushes, in this order:
 *
 *     pushCheckpoint(cp₁, leaves₁)   then the rows with chain key (tx_id, position) ≤ cp₁.last
 *     pushCheckpoint(cp₂, leaves₂)   then the rows with key in (cp₁.last, cp₂.last]
 *     …
 *     pushCheckpoint(cpₙ, leavesₙ)   then the rows with key in (cpₙ₋₁.last, cpₙ.last],
 *                                    then the rows past cpₙ.last (unsealed)
 *     finish()
 *
 * rows in chain order ((tx_id, position) ascending) throughout. The order of pushes is all the
 * verifier knows: a row is judged against the checkpoint pushed most recently before it.
 * Within that checkpoint rows are matched to sealed leaves by position, so a row a forger
 * inserted is caught wherever it falls: a row whose position the checkpoint did not seal is
 * `row_inserted` if its key is within the checkpoint's range (≤ last), else it is unsealed.
 * Unsealed rows followed by another checkpoint are out of place: one `order_changed` says so.
 *
 * Per checkpoint, when it arrives:
 * - the signature, by the configured key or one it handed over to, never by a key after its
 *   successor signed a checkpoint (`checkpoint_signature_bad`);
 * - seq is one more than the previous one's and prev_checkpoint_hash is the previous one's
 *   hash, or 1 and 64 zeros for the first (`checkpoint_sequence_broken`);
 * - the sealed leaves hash to merkle_root, there are `count` of them with distinct positions,
 *   first/last name the first and last of them (last carries over when count is 0), and total
 *   is the previous total plus count (`checkpoint_altered`).
 *
 * Per checkpoint, when its rows are done (next checkpoint or finish):
 * - each sealed position with a row whose leaf hash is the sealed one is fine;
 * - a differing row is `order_changed` when its content is sealed at another place of this
 *   checkpoint (its leaf, recomputed at that position with a plausible tx_id, is the sealed
 *   one there: swapped contents, a moved row, a changed tx_id), else `row_changed`; a sealed
 *   position with no row and whose content turned up nowhere else is `row_missing`;
 * - matching rows arriving in another order than sealed are `order_changed`;
 * - the chain head over the rows actually pushed, starting from the previous checkpoint's
 *   chain_hash (so one bad row does not condemn every later checkpoint; over a clean ledger
 *   this is the one chain from CHAIN_GENESIS), must be chain_hash. `chain_mismatch` is
 *   reported only when no row finding of the checkpoint already explains it; a single wrong
 *   chain_hash is reported at its checkpoint and at the next, which no longer links to it.
 *
 * A row pushed with a position the current checkpoint sealed is compared with it even if its
 * key is past `last` (its tx_id changed). Rows that cannot be encoded are findings
 * (`row_changed`), not exceptions; only breaking the call contract (pushing after finish)
 * throws.
 */
export class LedgerChainVerifier {
  readonly #keyId: string
  readonly #trusted: ReadonlyMap<string, TrustedLedgerKey>
  readonly #rotated: boolean
  /** The latest key generation a checkpoint was signed with: an earlier key signs no more after it. */
  #generation = 0
  readonly #maxProblems: number
  readonly #problems: ChainProblem[] = []
  #problemsOmitted = 0
  #firstBadPosition: bigint | null = null
  #rows = 0
  #sealedRows = 0
  #unsealedRows = 0
  #checkpoints = 0
  #previous: PreviousCheckpoint | null = null
  /** Checkpoints pushed as headers only (pushHeader). */
  #headers = 0
  #segment: CheckpointSegment | null = null
  #chainHead: Uint8Array = CHAIN_GENESIS
  /** Unsealed rows so far; if another checkpoint follows, they were out of place. */
  #pending = { count: 0, firstPosition: null as string | null }
  #result: ChainVerification | null = null

  constructor(options: LedgerChainVerifierOptions) {
    const { publicKey, handOvers = [], maxProblems = DEFAULT_MAX_PROBLEMS } = options
    if (!(publicKey instanceof Uint8Array) || publicKey.length !== 32) {
      throw new Error('ledger public key must be 32 raw bytes (see parseLedgerPublicKey)')
    }
    if (!Number.isSafeInteger(maxProblems) || maxProblems < 0) {
      throw new Error('maxProblems must be a non-negative integer')
    }
    this.#keyId = ledgerKeyId(publicKey)
    this.#trusted = ledgerKeysTrustedFrom(publicKey, handOvers)
    this.#rotated = this.#trusted.size > 1
    this.#maxProblems = maxProblems
  }

  /**
   * For a range that does not start at the ledger's beginning (an export from a position on):
   * the checkpoint just before it. Its signature is checked; the next checkpoint must follow it
   * (seq, prev_checkpoint_hash, total) and the chain resumes from its chain_hash. No rows of its
   * own are expected. Only as the very first push.
   */
  pushAnchor(cp: LedgerCheckpoint): void {
    this.#assertOpen()
    if (this.#previous !== null || this.#segment !== null || this.#rows > 0) {
      throw new Error('the anchor checkpoint must be pushed first')
    }
    const seq: number | null = Number.isSafeInteger(cp.seq) ? cp.seq : null
    if (this.#signatureProblem(cp) !== null) {
      this.#report({ kind: 'checkpoint_signature_bad', position: null, checkpoint: seq, detail: 'the anchor checkpoint\'s signature does not verify' })
    }
    let hash: string | null = null
    try {
      hash = checkpointHash(cp)
    } catch (error) {
      this.#report({ kind: 'checkpoint_altered', position: null, checkpoint: seq, detail: `malformed anchor: ${messageOf(error)}` })
    }
    this.#previous = { seq: seq ?? 0, hash, total: Number.isSafeInteger(cp.total) ? cp.total : 0, last: cp.last }
    if (typeof cp.chain_hash === 'string' && HEX_32.test(cp.chain_hash)) this.#chainHead = Uint8Array.from(Buffer.from(cp.chain_hash, 'hex'))
  }

  /**
   * A checkpoint whose rows are not read (archived, or sealed before the snapshot a
   * verification starts from): its signature, its place in the sequence (seq and
   * prev_checkpoint_hash) and its running total are checked, its leaves and rows are not; the
   * chain resumes from its chain_hash. Only before the first checkpoint pushed with its rows.
   */
  pushHeader(cp: LedgerCheckpoint): void {
    this.#assertOpen()
    if (typeof cp !== 'object' || cp === null) throw new Error('checkpoint must be an object')
    if (this.#segment !== null || this.#rows > 0 || this.#checkpoints > this.#headers) {
      throw new Error('headers come before every checkpoint pushed with its rows')
    }
    this.#checkpoints++
    this.#headers++
    const header = this.#checkHeader(cp)
    if (header.inSequence && cp.total !== (header.previous?.total ?? 0) + cp.count) {
      header.altered.push(`total ${String(cp.total)} is not ${header.previous?.total ?? 0} + count ${String(cp.count)}`)
    }
    this.#reportAltered(header.seq, header.altered)
    this.#advance(cp, header)
    if (typeof cp.chain_hash === 'string' && HEX_32.test(cp.chain_hash)) this.#chainHead = Uint8Array.from(Buffer.from(cp.chain_hash, 'hex'))
  }

  /** The next checkpoint (seq order) and the leaves it sealed; closes the previous one's rows. */
  pushCheckpoint(cp: LedgerCheckpoint, leaves: SealedLeaves): void {
    this.#assertOpen()
    if (typeof cp !== 'object' || cp === null) throw new Error('checkpoint must be an object')
    this.#closeSegment()
    this.#settlePending(cp)
    this.#checkpoints++
    const header = this.#checkHeader(cp)
    const { previous, altered, inSequence } = header
    const sealed = sealedLeavesOf(leaves, altered)
    // A missing checkpoint already explains a total or a last that skips it.
    altered.push(...leafFindings(cp, sealed, inSequence ? previous : undefined))
    if (inSequence && cp.total !== (previous?.total ?? 0) + cp.count) {
      const before = previous?.total ?? 0
      altered.push(`total ${String(cp.total)} is not ${before} + count ${String(cp.count)}`)
    }
    this.#reportAltered(header.seq, altered)
    this.#segment = new CheckpointSegment(cp, header.seq, sealed, this.#chainHead)
    this.#advance(cp, header)
  }

  /** Signature and place in the sequence; what is altered so far is returned for the caller to add to. */
  #checkHeader(cp: LedgerCheckpoint) {
    const previous = this.#previous
    const seq: number | null = Number.isSafeInteger(cp.seq) ? cp.seq : null
    let hash: string | null = null
    const altered: string[] = []
    try {
      hash = checkpointHash(cp)
    } catch (error) {
      altered.push(`malformed: ${messageOf(error)}`)
    }

    const signatureProblem = this.#signatureProblem(cp)
    if (signatureProblem !== null) {
      this.#report({ kind: 'checkpoint_signature_bad', position: null, checkpoint: seq, detail: signatureProblem })
    }

    const expectedSeq = previous === null ? 1 : previous.seq + 1
    const expectedLink = previous === null ? CHECKPOINT_GENESIS_HASH : previous.hash
    const broken: string[] = []
    if (cp.seq !== expectedSeq) {
      broken.push(
        previous === null
          ? `the first checkpoint has seq ${String(cp.seq)}, not 1`
          : `seq ${String(cp.seq)} follows seq ${previous.seq}`,
      )
    }
    if (expectedLink !== null && cp.prev_checkpoint_hash !== expectedLink) {
      broken.push(
        previous === null
          ? 'prev_checkpoint_hash of the first checkpoint is not 64 zeros'
          : `prev_checkpoint_hash is not the hash of checkpoint ${previous.seq}`,
      )
    }
    if (broken.length > 0) {
      this.#report({
        kind: 'checkpoint_sequence_broken',
        position: null,
        checkpoint: seq,
        detail: broken.join('; '),
      })
    }
    return { previous, seq, hash, altered, expectedSeq, inSequence: broken.length === 0 }
  }

  /** Why `cp`'s signature is not good evidence, or null: by a trusted key, and not one retired before it. */
  #signatureProblem(cp: LedgerCheckpoint): string | null {
    const key = typeof cp.key_id === 'string' ? this.#trusted.get(cp.key_id) : undefined
    if (key === undefined) {
      return this.#rotated
        ? `signed as key ${String(cp.key_id)}, neither the key verifying (${this.#keyId}) nor one it handed over to`
        : `signed as key ${String(cp.key_id)}, not by the key verifying (${this.#keyId})`
    }
    if (!verifyCheckpointSignature(cp, key.publicKey)) return 'the signature does not verify'
    // A retired key signing after its successor did is what a thief of the old key would do.
    if (key.generation < this.#generation) return `signed by key ${cp.key_id} after it had handed over (a checkpoint before this one was signed by its successor)`
    this.#generation = key.generation
    return null
  }

  #reportAltered(seq: number | null, altered: string[]): void {
    if (altered.length === 0) return
    this.#report({ kind: 'checkpoint_altered', position: null, checkpoint: seq, detail: altered.join('; ') })
  }

  #advance(cp: LedgerCheckpoint, header: { previous: PreviousCheckpoint | null; seq: number | null; hash: string | null; expectedSeq: number }): void {
    this.#previous = {
      seq: header.seq ?? header.expectedSeq,
      hash: header.hash,
      total: Number.isSafeInteger(cp.total) ? cp.total : (header.previous?.total ?? 0),
      last: cp.last,
    }
  }

  /** The next row in chain order; see the class comment for which checkpoint it is judged by. */
  pushRow(row: ChainRow): void {
    this.#assertOpen()
    this.#rows++
    const segment = this.#segment
    if (segment !== null && (segment.seals(row) || !isPast(row, segment.last))) {
      this.#sealedRows++
      segment.push(row)
      return
    }
    this.#unsealedRows++
    if (this.#pending.count++ === 0) this.#pending.firstPosition = decimalOrNull(row?.position)
  }

  /** Closes the last checkpoint's rows and returns the outcome; later pushes throw. */
  finish(): ChainVerification {
    if (this.#result !== null) return this.#result
    this.#closeSegment()
    this.#result = Object.freeze({
      ok: this.#problems.length === 0 && this.#problemsOmitted === 0,
      rows: this.#rows,
      sealedRows: this.#sealedRows,
      unsealedRows: this.#unsealedRows,
      checkpoints: this.#checkpoints,
      headerOnly: this.#headers,
      problems: [...this.#problems],
      problemsOmitted: this.#problemsOmitted,
      firstBadPosition: this.#firstBadPosition === null ? null : String(this.#firstBadPosition),
    })
    return this.#result
  }

  #assertOpen(): void {
    if (this.#result !== null) throw new Error('the verification is finished')
  }

  #closeSegment(): void {
    const segment = this.#segment
    if (segment === null) return
    for (const problem of segment.close()) this.#report(problem)
    this.#chainHead = segment.nextStart()
    this.#segment = null
  }

  #settlePending(next: LedgerCheckpoint): void {
    const { count, firstPosition } = this.#pending
    if (count === 0) return
    const after = this.#previous
    this.#report({
      kind: 'order_changed',
      position: firstPosition,
      checkpoint: after?.seq ?? null,
      detail:
        after === null
          ? `${count} row(s) arrived before the first checkpoint`
          : `${count} row(s) past checkpoint ${after.seq}'s last row, and not sealed by it, ` +
            `arrived before checkpoint ${String(next.seq)}`,
    })
    this.#unsealedRows -= count
    this.#sealedRows += count
    this.#pending = { count: 0, firstPosition: null }
  }

  #report(problem: ChainProblem): void {
    if (problem.position !== null && CANONICAL_DECIMAL.test(problem.position)) {
      const position = BigInt(problem.position)
      if (this.#firstBadPosition === null || position < this.#firstBadPosition) {
        this.#firstBadPosition = position
      }
    }
    if (this.#problems.length < this.#maxProblems) this.#problems.push(problem)
    else this.#problemsOmitted++
  }
}

/** Whether the row's chain key is past `last` (an empty ledger's null last: every row is). */
function isPast(row: ChainRow, last: unknown): boolean {
  if (last === null) return true
  const ref = last as ChainRowRef
  const keys = [row?.tx_id, row?.position, ref?.tx_id, ref?.position]
  if (!keys.every((key) => typeof key === 'string' && CANONICAL_DECIMAL.test(key))) return false
  const [tx, position, lastTx, lastPosition] = keys.map((key) => BigInt(key as string)) as [
    bigint,
    bigint,
    bigint,
    bigint,
  ]
  return tx > lastTx || (tx === lastTx && position > lastPosition)
}

function decimalOrNull(value: unknown): string | null {
  return typeof value === 'string' && CANONICAL_DECIMAL.test(value) ? value : null
}

