import { createHash } from 'node:crypto'
import {
  type ChainRowRef,
  CHECKPOINT_GENESIS_HASH,
  checkpointHash,
  type LedgerCheckpoint,
  ledgerKeyId,
  verifyCheckpointSignature,
} from './ledger-checkpoint.js'
import {
  CHAIN_GENESIS,
  type ChainRow,
  ledgerLeafHashAt,
  ledgerRowBytes,
} from './ledger-row-encoding.js'
import { merkleRoot } from './merkle-tree.js'

/** What a verification can find wrong. */
export type ChainProblemKind =
  | 'row_changed'
  | 'row_missing'
  | 'row_inserted'
  | 'order_changed'
  | 'checkpoint_signature_bad'
  | 'checkpoint_altered'
  | 'checkpoint_sequence_broken'
  | 'chain_mismatch'

/** One finding; `position` names the row, `checkpoint` the seq whose range it is in. */
export interface ChainProblem {
  readonly kind: ChainProblemKind
  readonly position: string | null
  readonly checkpoint: number | null
  readonly detail: string
}

/** Per checkpoint, in chain order: what the sealer recorded. */
export interface SealedLeaves {
  readonly positions: readonly string[]
  readonly hashes: readonly Uint8Array[]
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
  /** The first `maxProblems` findings, checkpoint by checkpoint, rows by position. */
  readonly problems: ChainProblem[]
  readonly problemsOmitted: number
  /** The lowest position any finding names, omitted ones included. */
  readonly firstBadPosition: string | null
}

export interface LedgerChainVerifierOptions {
  /** Raw 32-byte Ed25519 public key (parseLedgerPublicKey). */
  readonly publicKey: Uint8Array
  /** Findings kept in full (default 1000); the rest are only counted. */
  readonly maxProblems?: number
}

const DEFAULT_MAX_PROBLEMS = 1000
/**
 * Leaf hashes one checkpoint may spend on telling moved rows from changed ones (the search
 * is quadratic in the number of rows that differ). A handful of swapped rows costs a few
 * dozen; a wholesale rewrite exceeds it and is reported row by row as changed instead.
 */
const MOVE_SEARCH_BUDGET = 200_000
const CANONICAL_DECIMAL = /^(0|[1-9][0-9]*)$/
const HEX_32 = /^[0-9a-f]{64}$/

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
 * - the signature, by the configured key (`checkpoint_signature_bad`);
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
  readonly #publicKey: Uint8Array
  readonly #keyId: string
  readonly #maxProblems: number
  readonly #problems: ChainProblem[] = []
  #problemsOmitted = 0
  #firstBadPosition: bigint | null = null
  #rows = 0
  #sealedRows = 0
  #unsealedRows = 0
  #checkpoints = 0
  #previous: { seq: number; hash: string | null; total: number; last: unknown } | null = null
  #segment: CheckpointSegment | null = null
  #chainHead: Uint8Array = CHAIN_GENESIS
  /** Unsealed rows so far; if another checkpoint follows, they were out of place. */
  #pending = { count: 0, firstPosition: null as string | null }
  #result: ChainVerification | null = null

  constructor(options: LedgerChainVerifierOptions) {
    const { publicKey, maxProblems = DEFAULT_MAX_PROBLEMS } = options
    if (!(publicKey instanceof Uint8Array) || publicKey.length !== 32) {
      throw new Error('ledger public key must be 32 raw bytes (see parseLedgerPublicKey)')
    }
    if (!Number.isSafeInteger(maxProblems) || maxProblems < 0) {
      throw new Error('maxProblems must be a non-negative integer')
    }
    this.#publicKey = Uint8Array.from(publicKey)
    this.#keyId = ledgerKeyId(this.#publicKey)
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
    if (!verifyCheckpointSignature(cp, this.#publicKey)) {
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

  /** The next checkpoint (seq order) and the leaves it sealed; closes the previous one's rows. */
  pushCheckpoint(cp: LedgerCheckpoint, leaves: SealedLeaves): void {
    this.#assertOpen()
    if (typeof cp !== 'object' || cp === null) throw new Error('checkpoint must be an object')
    this.#closeSegment()
    this.#settlePending(cp)
    this.#checkpoints++
    const previous = this.#previous
    const seq: number | null = Number.isSafeInteger(cp.seq) ? cp.seq : null

    let hash: string | null = null
    const altered: string[] = []
    try {
      hash = checkpointHash(cp)
    } catch (error) {
      altered.push(`malformed: ${messageOf(error)}`)
    }

    if (!verifyCheckpointSignature(cp, this.#publicKey)) {
      this.#report({
        kind: 'checkpoint_signature_bad',
        position: null,
        checkpoint: seq,
        detail:
          cp.key_id === this.#keyId
            ? 'the signature does not verify'
            : `signed as key ${String(cp.key_id)}, not by the key verifying (${this.#keyId})`,
      })
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

    const sealed = sealedLeavesOf(leaves, altered)
    // A missing checkpoint already explains a total or a last that skips it.
    const inSequence = broken.length === 0
    altered.push(...leafFindings(cp, sealed, inSequence ? previous : undefined))
    if (inSequence && cp.total !== (previous?.total ?? 0) + cp.count) {
      const before = previous?.total ?? 0
      altered.push(`total ${String(cp.total)} is not ${before} + count ${String(cp.count)}`)
    }
    if (altered.length > 0) {
      this.#report({
        kind: 'checkpoint_altered',
        position: null,
        checkpoint: seq,
        detail: altered.join('; '),
      })
    }

    this.#segment = new CheckpointSegment(cp, seq, sealed, this.#chainHead)
    this.#previous = {
      seq: seq ?? expectedSeq,
      hash,
      total: Number.isSafeInteger(cp.total) ? cp.total : (previous?.total ?? 0),
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

/** A row that does not sit where the checkpoint sealed it, awaiting a verdict at close. */
interface UnmatchedRow {
  readonly row: ChainRow
  readonly reason: 'changed' | 'not_sealed' | 'duplicate' | 'unencodable'
  readonly error?: string
}

/** The rows of one checkpoint's range compared with its sealed leaves. */
class CheckpointSegment {
  readonly last: unknown
  readonly #cp: LedgerCheckpoint
  readonly #seq: number | null
  readonly #positions: readonly string[]
  readonly #hashes: readonly Uint8Array[]
  readonly #indexOf = new Map<string, number>()
  /** tx_id of the row seen at each sealed slot; null: a row that could not be encoded. */
  readonly #seenTx: (string | null | undefined)[]
  readonly #matched: boolean[]
  readonly #matchedInPushOrder: number[] = []
  readonly #unmatched: UnmatchedRow[] = []
  readonly #refFindings: string[] = []
  #head: Uint8Array
  #headKnown = true

  constructor(cp: LedgerCheckpoint, seq: number | null, sealed: SealedLeaves, start: Uint8Array) {
    this.#cp = cp
    this.#seq = seq
    this.last = cp.last
    this.#positions = sealed.positions
    this.#hashes = sealed.hashes
    sealed.positions.forEach((position, index) => {
      if (!this.#indexOf.has(position)) this.#indexOf.set(position, index)
    })
    this.#seenTx = new Array<string | null | undefined>(sealed.positions.length)
    this.#matched = new Array<boolean>(sealed.positions.length).fill(false)
    this.#head = start
  }

  seals(row: ChainRow): boolean {
    return typeof row?.position === 'string' && this.#indexOf.has(row.position)
  }

  push(row: ChainRow): void {
    let bytes: Uint8Array
    try {
      bytes = ledgerRowBytes(row)
    } catch (error) {
      this.#headKnown = false
      const index = typeof row?.position === 'string' ? this.#indexOf.get(row.position) : undefined
      if (index !== undefined && this.#seenTx[index] === undefined) this.#seenTx[index] = null
      this.#unmatched.push({ row, reason: 'unencodable', error: messageOf(error) })
      return
    }
    // chainNext and ledgerLeafHash, from bytes encoded once.
    this.#head = sha256(this.#head, bytes)
    const leaf = sha256(Uint8Array.of(0x00), bytes)
    const index = this.#indexOf.get(row.position)
    if (index === undefined) {
      this.#unmatched.push({ row, reason: 'not_sealed' })
      return
    }
    const sealedHere = equalBytes(leaf, this.#hashes[index] as Uint8Array)
    if (this.#seenTx[index] !== undefined) {
      // A second row at one position (only an export can have that): the sealed one of the
      // two keeps the slot, whichever came first.
      const earlier = this.#unmatched.findIndex(
        (entry) => entry.reason === 'changed' && entry.row.position === row.position,
      )
      if (!sealedHere || earlier === -1) {
        this.#unmatched.push({ row, reason: 'duplicate' })
        return
      }
      const [displaced] = this.#unmatched.splice(earlier, 1) as [UnmatchedRow]
      this.#unmatched.push({ row: displaced.row, reason: 'duplicate' })
    }
    this.#seenTx[index] = row.tx_id
    if (!sealedHere) {
      this.#unmatched.push({ row, reason: 'changed' })
      return
    }
    this.#matched[index] = true
    this.#matchedInPushOrder.push(index)
    this.#checkRef('first', index === 0, row)
    this.#checkRef('last', index === this.#positions.length - 1, row)
  }

  /** The chain head the next checkpoint's rows start from: the signed one when readable. */
  nextStart(): Uint8Array {
    const claimed = this.#cp.chain_hash
    return typeof claimed === 'string' && HEX_32.test(claimed)
      ? new Uint8Array(Buffer.from(claimed, 'hex'))
      : this.#head
  }

  close(): ChainProblem[] {
    const open = this.#matched.flatMap((matched, index) => (matched ? [] : [index]))
    const { moves, searched } = this.#findMoves(open)
    const rowFindings: ChainProblem[] = []
    const finding = (kind: ChainProblemKind, position: unknown, detail: string) => {
      const named = typeof position === 'string' ? position : null
      rowFindings.push({ kind, position: named, checkpoint: this.#seq, detail })
    }
    const notSearched = searched ? '' : ' (too many differing rows to look for moved ones)'
    const seq = String(this.#cp.seq)

    for (const entry of this.#unmatched) {
      const { row } = entry
      const move = moves.get(entry)
      if (move !== undefined) {
        const sealedAt = this.#positions[move.index] as string
        finding(
          'order_changed',
          row.position,
          sealedAt === row.position
            ? `the row sealed here with tx_id ${move.txId} now has tx_id ${row.tx_id}, ` +
                'which moves it in the chain order'
            : `holds the row sealed at position ${sealedAt}`,
        )
      } else if (entry.reason === 'unencodable') {
        finding('row_changed', row?.position, `cannot be encoded: ${entry.error ?? ''}`)
      } else if (entry.reason === 'changed') {
        finding('row_changed', row.position, `differs from the row sealed here${notSearched}`)
      } else if (entry.reason === 'duplicate') {
        finding('row_inserted', row.position, 'a second row at a position sealed once')
      } else {
        finding('row_inserted', row.position, `not sealed by checkpoint ${seq}${notSearched}`)
      }
    }
    const claimed = new Set([...moves.values()].map((move) => move.index))
    for (const index of open) {
      if (this.#seenTx[index] === undefined && !claimed.has(index)) {
        finding('row_missing', this.#positions[index], `sealed by checkpoint ${seq}, but absent`)
      }
    }
    for (const index of outOfOrder(this.#matchedInPushOrder)) {
      finding(
        'order_changed',
        this.#positions[index],
        `sealed as row ${index + 1} of ${this.#positions.length}, but arrived out of that order`,
      )
    }
    rowFindings.sort((a, b) => comparePositions(a.position, b.position))

    const problems: ChainProblem[] = []
    if (this.#refFindings.length > 0) {
      problems.push({
        kind: 'checkpoint_altered',
        position: null,
        checkpoint: this.#seq,
        detail: this.#refFindings.join('; '),
      })
    }
    problems.push(...rowFindings)
    const computed = Buffer.from(this.#head).toString('hex')
    if (rowFindings.length === 0 && this.#headKnown && computed !== this.#cp.chain_hash) {
      problems.push({
        kind: 'chain_mismatch',
        position: null,
        checkpoint: this.#seq,
        detail: `the rows chain to ${computed}, the checkpoint says ${String(this.#cp.chain_hash)}`,
      })
    }
    return problems
  }

  /** A matching sealed row at either end must be the one the checkpoint's first/last names. */
  #checkRef(name: 'first' | 'last', applies: boolean, row: ChainRow): void {
    const ref = this.#cp[name] as ChainRowRef | null
    if (!applies || ref === null || typeof ref !== 'object' || ref.tx_id === row.tx_id) return
    this.#refFindings.push(
      `${name} names tx_id ${String(ref.tx_id)}, ` +
        `the sealed row at position ${row.position} has tx_id ${row.tx_id}`,
    )
  }

  /**
   * For each differing row, an unmatched sealed slot whose leaf its content gives at that
   * slot's position with one of a few plausible tx_ids: its own, the one the slot's row now
   * has, those of the slot's neighbours (a transaction's rows sit together), those of the
   * other differing rows (tx_ids swapped).
   */
  #findMoves(open: readonly number[]): {
    moves: Map<UnmatchedRow, { index: number; txId: string }>
    searched: boolean
  } {
    const moves = new Map<UnmatchedRow, { index: number; txId: string }>()
    const candidates = this.#unmatched.filter((entry) => entry.reason !== 'unencodable')
    if (candidates.length === 0 || open.length === 0) return { moves, searched: true }
    const pairs = candidates.length * open.length
    let swappedTx = [...new Set(candidates.map((entry) => entry.row.tx_id))]
    if (pairs * (4 + swappedTx.length) > MOVE_SEARCH_BUDGET) swappedTx = []
    if (pairs * 4 > MOVE_SEARCH_BUDGET) return { moves, searched: false }

    const claimed = new Set<number>()
    for (const entry of candidates) {
      const { row } = entry
      const leafAt = ledgerLeafHashAt(row)
      search: for (const index of open) {
        const position = this.#positions[index] as string
        if (claimed.has(index) || !CANONICAL_DECIMAL.test(position)) continue
        const seen = this.#seenTx
        const txIds = new Set([row.tx_id, seen[index], seen[index - 1], seen[index + 1], ...swappedTx])
        for (const txId of txIds) {
          if (typeof txId !== 'string' || !CANONICAL_DECIMAL.test(txId)) continue
          if (position === row.position && txId === row.tx_id) continue // known to differ
          if (equalBytes(leafAt(position, txId), this.#hashes[index] as Uint8Array)) {
            moves.set(entry, { index, txId })
            claimed.add(index)
            break search
          }
        }
      }
    }
    return { moves, searched: true }
  }
}

/** The leaves as arrays of the right types; anything else becomes a finding and is dropped. */
function sealedLeavesOf(leaves: SealedLeaves, findings: string[]): SealedLeaves {
  const positions = Array.isArray(leaves?.positions) ? leaves.positions : null
  const hashes = Array.isArray(leaves?.hashes) ? leaves.hashes : null
  if (positions === null || hashes === null) {
    findings.push('sealed leaves are not two arrays')
    return { positions: [], hashes: [] }
  }
  if (positions.length !== hashes.length) {
    findings.push(`sealed leaves: ${positions.length} positions but ${hashes.length} hashes`)
  }
  const kept = { positions: [] as string[], hashes: [] as Uint8Array[] }
  for (let i = 0; i < Math.min(positions.length, hashes.length); i++) {
    const position: unknown = positions[i]
    const hash: unknown = hashes[i]
    if (typeof position !== 'string' || !(hash instanceof Uint8Array) || hash.length !== 32) {
      findings.push(`sealed leaf ${i + 1} is not a position and a 32-byte hash`)
      continue
    }
    kept.positions.push(position)
    kept.hashes.push(hash)
  }
  return kept
}

/**
 * What the sealed leaves say about the checkpoint's count, root, first and last. `previous`
 * is undefined when the sequence is broken: then what last should carry over is unknown.
 */
function leafFindings(
  cp: LedgerCheckpoint,
  sealed: SealedLeaves,
  previous: { last: unknown } | null | undefined,
): string[] {
  const findings: string[] = []
  const { positions, hashes } = sealed
  if (cp.count !== hashes.length) {
    findings.push(`count ${String(cp.count)}, but ${hashes.length} sealed leaves`)
  }
  const root = Buffer.from(merkleRoot(hashes)).toString('hex')
  if (root !== cp.merkle_root) {
    findings.push(`the sealed leaves hash to root ${root}, the checkpoint says ${String(cp.merkle_root)}`)
  }
  const seen = new Set<string>()
  for (const position of positions) {
    if (seen.has(position)) findings.push(`position ${position} sealed twice`)
    seen.add(position)
  }
  if (positions.length === 0) {
    if (cp.first !== null) findings.push('first names a row, but no rows are sealed')
    if (previous !== undefined && !sameRef(cp.last, previous?.last ?? null)) {
      findings.push('last is not carried over from the previous checkpoint')
    }
  } else {
    if (refPosition(cp.first) !== positions[0]) {
      findings.push(`first is not the first sealed row (position ${positions[0] as string})`)
    }
    if (refPosition(cp.last) !== positions[positions.length - 1]) {
      const lastPosition = positions[positions.length - 1] as string
      findings.push(`last is not the last sealed row (position ${lastPosition})`)
    }
  }
  return findings
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

/** Sealed indices outside one longest increasing run of `sequence`: the rows that moved. */
function outOfOrder(sequence: readonly number[]): number[] {
  // Patience sorting: tails[k] is the index in `sequence` ending the best run of length k+1.
  const tails: number[] = []
  const before = new Array<number>(sequence.length).fill(-1)
  sequence.forEach((value, i) => {
    let lo = 0
    let hi = tails.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if ((sequence[tails[mid] as number] as number) < value) lo = mid + 1
      else hi = mid
    }
    if (lo > 0) before[i] = tails[lo - 1] as number
    tails[lo] = i
  })
  const inRun = new Set<number>()
  let at = tails.length > 0 ? (tails[tails.length - 1] as number) : -1
  for (; at !== -1; at = before[at] as number) inRun.add(at)
  return sequence.filter((_, i) => !inRun.has(i))
}

function refPosition(ref: unknown): unknown {
  return typeof ref === 'object' && ref !== null ? (ref as ChainRowRef).position : undefined
}

function sameRef(a: unknown, b: unknown): boolean {
  if (a === null || b === null) return a === b
  const x = a as ChainRowRef
  const y = b as ChainRowRef
  if (typeof x !== 'object' || typeof y !== 'object') return false
  return x.tx_id === y.tx_id && x.position === y.position
}

function comparePositions(a: string | null, b: string | null): number {
  const x = a !== null && CANONICAL_DECIMAL.test(a) ? BigInt(a) : null
  const y = b !== null && CANONICAL_DECIMAL.test(b) ? BigInt(b) : null
  if (x === null || y === null) return x === y ? 0 : x === null ? 1 : -1
  return x < y ? -1 : x > y ? 1 : 0
}

function decimalOrNull(value: unknown): string | null {
  return typeof value === 'string' && CANONICAL_DECIMAL.test(value) ? value : null
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

function sha256(...parts: Uint8Array[]): Uint8Array {
  const hash = createHash('sha256')
  for (const part of parts) hash.update(part)
  return new Uint8Array(hash.digest())
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i])
}
