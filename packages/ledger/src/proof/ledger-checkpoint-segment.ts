/**
 * One checkpoint against its sealed leaves — the leaves themselves (Merkle root, count, links) and
 * the rows of its range: the part of the chain verifier that holds a checkpoint's worth of state and tells a changed row from a moved, missing or inserted one.
 */
import { createHash } from 'node:crypto'
import type { ChainProblem, ChainProblemKind, SealedLeaves } from './ledger-chain-problem.js'
import type { ChainRowRef, LedgerCheckpoint } from './ledger-checkpoint.js'
import { type ChainRow, ledgerLeafHashAt, ledgerRowBytes } from './ledger-row-encoding.js'
import { merkleRoot } from './merkle-tree.js'

export const CANONICAL_DECIMAL = /^(0|[1-9][0-9]*)$/
export const HEX_32 = /^[0-9a-f]{64}$/

/** A row that does not sit where the checkpoint sealed it, awaiting a verdict at close. */
export interface UnmatchedRow {
  readonly row: ChainRow
  readonly reason: 'changed' | 'not_sealed' | 'duplicate' | 'unencodable'
  readonly error?: string
}

/**
 * Leaf hashes one checkpoint may spend on telling moved rows from changed ones (the search
 * is quadratic in the number of rows that differ). A handful of swapped rows costs a few
 * dozen; a wholesale rewrite exceeds it and is reported row by row as changed instead.
 */
const MOVE_SEARCH_BUDGET = 200_000

/** The rows of one checkpoint's range compared with its sealed leaves. */
export class CheckpointSegment {
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

function comparePositions(a: string | null, b: string | null): number {
  const x = a !== null && CANONICAL_DECIMAL.test(a) ? BigInt(a) : null
  const y = b !== null && CANONICAL_DECIMAL.test(b) ? BigInt(b) : null
  if (x === null || y === null) return x === y ? 0 : x === null ? 1 : -1
  return x < y ? -1 : x > y ? 1 : 0
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

export function sha256(...parts: Uint8Array[]): Uint8Array {
  const hash = createHash('sha256')
  for (const part of parts) hash.update(part)
  return new Uint8Array(hash.digest())
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i])
}

/** The leaves as arrays of the right types; anything else becomes a finding and is dropped. */
export function sealedLeavesOf(leaves: SealedLeaves, findings: string[]): SealedLeaves {
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
export function leafFindings(
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
