import { emptyTreeHash, equalHashes, interiorHash, isCount, isHash, powerOfTwo } from './tree-hash.js'
import { readSubtreeHashes, type SubtreeCoordinates, type TileReader } from './tile-hash-reader.js'

/**
 * RFC 6962 roots and proofs of the tiled tree, computed from tiles alone. Every hash a proof
 * carries is MTH of a range of leaves that the RFC's recursion produces; such a range splits
 * into perfect subtrees (whose hashes the tiles give back) and its MTH is theirs folded right
 * to left. Each function asks for all its tiles in one reader call.
 */

/** A range of leaves [start, end) whose MTH a proof carries. */
interface LeafRange {
  readonly start: number
  readonly end: number
}

/**
 * The perfect subtrees that make up leaves [start, end), left to right, each as large as the
 * start's alignment and the remaining length allow. For the ranges RFC 6962 hashes (the tree
 * itself and the halves its recursion splits off) this is the RFC's own shape: the largest
 * power of two first, then the rest.
 */
export function perfectSubtrees(start: number, end: number): SubtreeCoordinates[] {
  if (!isCount(start) || !isCount(end) || end < start) throw new RangeError(`[${start}, ${end}) is not a range of leaves`)
  const out: SubtreeCoordinates[] = []
  let at = start
  while (at < end) {
    let height = 0
    while (powerOfTwo(height + 1) <= end - at && at % powerOfTwo(height + 1) === 0) height++
    out.push({ height, index: at / powerOfTwo(height) })
    at += powerOfTwo(height)
  }
  return out
}

/** The RFC 6962 root of the first `size` leaves, from tiles (SHA-256 of nothing, with no read, for 0). */
export async function treeRootFromTiles(size: number, reader: TileReader): Promise<Uint8Array> {
  if (!isCount(size)) throw new RangeError(`tree size ${size} is not a non-negative safe integer`)
  if (size === 0) return emptyTreeHash()
  const [root] = await rangeHashes(size, [{ start: 0, end: size }], reader)
  return root as Uint8Array
}

/**
 * The audit path of leaf `index` in the tree of `size` leaves (RFC 6962 §2.1.1 PATH), the leaf's
 * sibling first — the order tlog-proof files and verifyInclusion take.
 */
export async function inclusionProofFromTiles(index: number, size: number, reader: TileReader): Promise<Uint8Array[]> {
  if (!isCount(size)) throw new RangeError(`tree size ${size} is not a non-negative safe integer`)
  if (!isCount(index) || index >= size) throw new RangeError(`leaf index ${index} is outside a tree of ${size} leaves`)
  // PATH(m, D[a:b]) splits at k and recurses into the half holding m, appending the other half's
  // MTH after the deeper path: walking down collects them root-side first, so reverse at the end.
  const siblings: LeafRange[] = []
  let start = 0
  let end = size
  while (end - start > 1) {
    const split = start + largestPowerOfTwoBelow(end - start)
    if (index < split) {
      siblings.push({ start: split, end })
      end = split
    } else {
      siblings.push({ start, end: split })
      start = split
    }
  }
  return rangeHashes(size, siblings.reverse(), reader)
}

/**
 * The consistency proof from the tree of `oldSize` leaves to the one of `newSize` (RFC 6962
 * §2.1.2 PROOF, what a tlog-witness add-checkpoint carries). Empty when oldSize is 0 (the empty
 * tree is consistent with every tree) or equals newSize.
 */
export async function consistencyProofFromTiles(oldSize: number, newSize: number, reader: TileReader): Promise<Uint8Array[]> {
  if (!isCount(oldSize) || !isCount(newSize) || oldSize > newSize) {
    throw new RangeError(`no consistency proof from a tree of ${oldSize} leaves to one of ${newSize}`)
  }
  if (oldSize === 0 || oldSize === newSize) return []
  // SUBPROOF(m, D[a:b], b): the recursion descends one half at a time and appends the other
  // half's MTH after the deeper subproof, so collecting on the way down gives the reverse order.
  const parts: LeafRange[] = []
  let start = 0
  let end = newSize
  let known = true // the b flag: D[start:end] still ends at oldSize's own root, which the verifier has
  for (;;) {
    if (oldSize === end) {
      if (!known) parts.push({ start, end })
      break
    }
    const split = start + largestPowerOfTwoBelow(end - start)
    if (oldSize <= split) {
      parts.push({ start: split, end })
      end = split
    } else {
      parts.push({ start, end: split })
      start = split
      known = false
    }
  }
  return rangeHashes(newSize, parts.reverse(), reader)
}

/**
 * Whether `proof` shows the tree of `oldSize` leaves with `oldRoot` is a prefix of the tree of
 * `newSize` leaves with `newRoot`: RFC 9162 §2.1.4.2 step for step, for 0 < oldSize < newSize.
 * oldSize == newSize needs an empty proof and equal roots; oldSize 0 needs an empty proof and
 * the empty tree's root (as tlog-witness has it). False, never a throw, on malformed input.
 */
export function verifyConsistency(
  oldSize: number,
  newSize: number,
  proof: readonly Uint8Array[],
  oldRoot: Uint8Array,
  newRoot: Uint8Array,
): boolean {
  if (!isCount(oldSize) || !isCount(newSize) || oldSize > newSize) return false
  if (!Array.isArray(proof) || !proof.every(isHash) || !isHash(oldRoot) || !isHash(newRoot)) return false
  if (oldSize === newSize) {
    if (proof.length !== 0 || !equalHashes(oldRoot, newRoot)) return false
    return oldSize !== 0 || equalHashes(oldRoot, emptyTreeHash())
  }
  if (oldSize === 0) return proof.length === 0 && equalHashes(oldRoot, emptyTreeHash())
  // 1. An empty path proves nothing between two different sizes.
  if (proof.length === 0) return false
  // 2. A power-of-two old tree is one node of the new one, so the path leaves its root out.
  const path = isPowerOfTwo(oldSize) ? [oldRoot, ...proof] : [...proof]
  // 3.
  let fn = oldSize - 1
  let sn = newSize - 1
  // 4. Climb past the levels where the old tree's last node is a right child.
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2)
    sn = Math.floor(sn / 2)
  }
  // 5.
  let fr = path[0] as Uint8Array
  let sr = fr
  // 6.
  for (const c of path.slice(1)) {
    if (sn === 0) return false
    if (fn % 2 === 1 || fn === sn) {
      fr = interiorHash(c, fr)
      sr = interiorHash(c, sr)
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2)
          sn = Math.floor(sn / 2)
        }
      }
    } else {
      sr = interiorHash(sr, c)
    }
    fn = Math.floor(fn / 2)
    sn = Math.floor(sn / 2)
  }
  // 7.
  return sn === 0 && equalHashes(fr, oldRoot) && equalHashes(sr, newRoot)
}

/** MTH of each range, from one batch of tile reads in a tree of `size` leaves. */
async function rangeHashes(size: number, ranges: readonly LeafRange[], reader: TileReader): Promise<Uint8Array[]> {
  const pieces = ranges.map((r) => perfectSubtrees(r.start, r.end))
  const hashes = await readSubtreeHashes(size, pieces.flat(), reader)
  let next = 0
  return pieces.map((subtrees) => {
    const own = hashes.slice(next, next + subtrees.length)
    next += subtrees.length
    let hash = own[own.length - 1] as Uint8Array
    for (let i = own.length - 2; i >= 0; i--) hash = interiorHash(own[i] as Uint8Array, hash)
    return hash
  })
}

/** The k of RFC 6962's split: the largest power of two strictly below n (n > 1). */
function largestPowerOfTwoBelow(n: number): number {
  let k = 1
  while (k * 2 < n) k *= 2
  return k
}

function isPowerOfTwo(n: number): boolean {
  let x = n
  while (x > 1 && x % 2 === 0) x /= 2
  return x === 1
}
