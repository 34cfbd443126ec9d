import { sha256, sha256Prefixed } from './sha256.js'

/**
 * RFC 6962 / RFC 9162 Merkle trees over leaf hashes (each already SHA-256(0x00 ‖ data), see
 * ledgerLeafHash). Interior nodes are SHA-256(0x01 ‖ left ‖ right); the tree of n leaves splits
 * at the largest power of two below n, which is what building level by level and carrying an
 * odd last node up unchanged produces. The empty tree's root is SHA-256 of nothing.
 *
 * Proofs are the RFC's audit paths (siblings from the leaf up), so any RFC 6962 verifier can
 * check a receipt.
 */

/** Length of every node: a SHA-256 digest. */
export const MERKLE_HASH_BYTES = 32

/** Root of the tree over `leaves`, in order. */
export function merkleRoot(leaves: readonly Uint8Array[]): Uint8Array {
  if (leaves.length === 0) return sha256(new Uint8Array(0))
  let level = leaves.map(checkedNode)
  while (level.length > 1) level = parentLevel(level)
  return level[0] as Uint8Array
}

/** The audit path of leaf `index` (RFC 6962 §2.1.1 PATH): sibling hashes, deepest first. */
export function inclusionProof(leaves: readonly Uint8Array[], index: number): Uint8Array[] {
  if (!Number.isSafeInteger(index) || index < 0 || index >= leaves.length) {
    throw new RangeError(`leaf index ${index} is outside a tree of ${leaves.length} leaves`)
  }
  const proof: Uint8Array[] = []
  let level = leaves.map(checkedNode)
  let i = index
  while (level.length > 1) {
    const sibling = i % 2 === 1 ? i - 1 : i + 1
    // The odd last node of a level has no sibling there: it moves up as it is.
    if (sibling < level.length) proof.push(level[sibling] as Uint8Array)
    level = parentLevel(level)
    i = Math.floor(i / 2)
  }
  return proof
}

/**
 * Whether `proof` shows `leaf` at `index` in the tree of `treeSize` leaves with `root`: the
 * RFC 9162 §2.1.3.2 algorithm, step for step. False (never a throw) on any malformed input,
 * since proofs come from files.
 *
 * `treeSize` must come from where `root` does (a signed checkpoint's count), not from the
 * proof's bearer: a path also fits every larger tree whose path to `index` has the same shape.
 */
export function verifyInclusion(
  leaf: Uint8Array,
  index: number,
  treeSize: number,
  proof: readonly Uint8Array[],
  root: Uint8Array,
): boolean {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(treeSize)) return false
  if (index < 0 || index >= treeSize) return false
  if (!isNode(leaf) || !isNode(root) || !proof.every(isNode)) return false
  // Arithmetic rather than bit operators: these are 53-bit numbers, not 32-bit ones.
  let fn = index
  let sn = treeSize - 1
  let r = leaf
  for (const p of proof) {
    if (sn === 0) return false
    if (fn % 2 === 1 || fn === sn) {
      r = interiorHash(p, r)
      // fn === sn with fn even: the last node of its level, carried up with no sibling.
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2)
        sn = Math.floor(sn / 2)
      }
    } else {
      r = interiorHash(r, p)
    }
    fn = Math.floor(fn / 2)
    sn = Math.floor(sn / 2)
  }
  return sn === 0 && equalBytes(r, root)
}

/** SHA-256(0x01 ‖ left ‖ right). */
function interiorHash(left: Uint8Array, right: Uint8Array): Uint8Array {
  return sha256Prefixed(0x01, left, right)
}

function parentLevel(level: readonly Uint8Array[]): Uint8Array[] {
  const parents: Uint8Array[] = []
  for (let i = 0; i + 1 < level.length; i += 2) {
    parents.push(interiorHash(level[i] as Uint8Array, level[i + 1] as Uint8Array))
  }
  if (level.length % 2 === 1) parents.push(level[level.length - 1] as Uint8Array)
  return parents
}

function isNode(value: unknown): value is Uint8Array {
  return value instanceof Uint8Array && value.length === MERKLE_HASH_BYTES
}

function checkedNode(node: Uint8Array, index: number): Uint8Array {
  if (!isNode(node)) throw new Error(`leaf ${index} is not a ${MERKLE_HASH_BYTES}-byte hash`)
  return node
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i])
}
