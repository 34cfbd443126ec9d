import { emptyTreeHash, HASH_BYTES, interiorHash, isCount, isHash, onesInBinary, powerOfTwo } from './tree-hash.js'
import { TILE_HEIGHT } from './tile-path.js'

/**
 * The right edge of the one growing tree (a "compact range"): all a log must keep to append
 * leaves and compute the new root without reading back the tree. A tree of `size` leaves is a
 * row of perfect subtrees, one per 1 bit of `size`, largest (leftmost) first; appending a leaf
 * merges it with the smallest ones exactly as a binary counter carries.
 */

/** A tree of `size` leaves as the roots of its perfect subtrees, largest first (one per 1 bit of `size`). */
export interface TreeEdge {
  readonly size: number
  readonly nodes: readonly Uint8Array[]
}

/** The tree of no leaves. */
export const EMPTY_TREE_EDGE: TreeEdge = Object.freeze({ size: 0, nodes: Object.freeze([]) as readonly Uint8Array[] })

/**
 * A perfect subtree's hash the tiles keep: `height` a multiple of 8 (0 = a leaf hash, 8 = the
 * root of 256 leaves, …) and `index` its place among the subtrees of that height, so the tile
 * at level height/8, index floor(index/256) holds it at offset index mod 256.
 */
export interface StoredHash {
  readonly height: number
  readonly index: number
  readonly hash: Uint8Array
}

/**
 * `edge` grown by `leafHashes` (each SHA-256(0x00 ‖ entry)), and every tile hash the append
 * completed: the leaf hashes themselves and each perfect subtree of height 8, 16, … that the
 * new leaves close, in the order they close. Costs O(k + log n) hashes for k leaves; `edge` is
 * left as it was.
 */
export function edgeAppend(edge: TreeEdge, leafHashes: readonly Uint8Array[]): { edge: TreeEdge; stored: StoredHash[] } {
  checkEdge(edge)
  if (!Array.isArray(leafHashes)) throw new TypeError('leaf hashes must be an array')
  if (edge.size + leafHashes.length > Number.MAX_SAFE_INTEGER) {
    throw new RangeError(`${leafHashes.length} more leaves would take the tree past 2^53 − 1`)
  }
  leafHashes.forEach((leaf, i) => {
    if (!isHash(leaf)) throw new TypeError(`leaf hash ${i} is not ${HASH_BYTES} bytes`)
  })
  const nodes = [...edge.nodes]
  const stored: StoredHash[] = []
  let size = edge.size
  for (const leaf of leafHashes) {
    stored.push({ height: 0, index: size, hash: leaf })
    nodes.push(leaf)
    // Each trailing 1 bit of the old size is a perfect subtree the new leaf completes a twin of.
    let carry = size
    let height = 0
    while (carry % 2 === 1) {
      const right = nodes.pop() as Uint8Array
      const left = nodes.pop() as Uint8Array
      const parent = interiorHash(left, right)
      nodes.push(parent)
      height++
      carry = Math.floor(carry / 2)
      if (height % TILE_HEIGHT === 0) stored.push({ height, index: (size + 1) / powerOfTwo(height) - 1, hash: parent })
    }
    size++
  }
  return { edge: { size, nodes }, stored }
}

/** The RFC 6962 root of the tree: the edge's nodes folded right to left; SHA-256 of nothing when empty. */
export function edgeRoot(edge: TreeEdge): Uint8Array {
  checkEdge(edge)
  if (edge.nodes.length === 0) return emptyTreeHash()
  let root = edge.nodes[edge.nodes.length - 1] as Uint8Array
  for (let i = edge.nodes.length - 2; i >= 0; i--) root = interiorHash(edge.nodes[i] as Uint8Array, root)
  return root
}

/** The edge's nodes concatenated (32 bytes each), to store beside the checkpoint of its size. */
export function encodeTreeEdge(edge: TreeEdge): Uint8Array {
  checkEdge(edge)
  const bytes = new Uint8Array(edge.nodes.length * HASH_BYTES)
  edge.nodes.forEach((node, i) => bytes.set(node, i * HASH_BYTES))
  return bytes
}

/**
 * The edge `encodeTreeEdge` wrote for a tree of `size` leaves. Throws when the bytes are not
 * exactly one hash per 1 bit of `size`: the stored edge and its checkpoint disagree, and
 * appending to it would sign a tree that is not the one published.
 */
export function decodeTreeEdge(size: number, bytes: Uint8Array): TreeEdge {
  if (!isCount(size)) throw new RangeError(`tree size ${size} is not a non-negative safe integer`)
  if (!(bytes instanceof Uint8Array)) throw new TypeError('a stored tree edge must be bytes')
  const count = onesInBinary(size)
  if (bytes.length !== count * HASH_BYTES) {
    throw new RangeError(`a tree of ${size} leaves has an edge of ${count * HASH_BYTES} bytes, not ${bytes.length}`)
  }
  const nodes: Uint8Array[] = []
  for (let i = 0; i < count; i++) nodes.push(bytes.slice(i * HASH_BYTES, (i + 1) * HASH_BYTES))
  return { size, nodes }
}

/** An edge whose node count does not match its size would silently give wrong roots: refuse it. */
function checkEdge(edge: TreeEdge): void {
  if (!isCount(edge.size)) throw new RangeError(`tree size ${edge.size} is not a non-negative safe integer`)
  const count = onesInBinary(edge.size)
  if (edge.nodes.length !== count) throw new RangeError(`a tree of ${edge.size} leaves has ${count} edge nodes, not ${edge.nodes.length}`)
  edge.nodes.forEach((node, i) => {
    if (!isHash(node)) throw new TypeError(`edge node ${i} is not ${HASH_BYTES} bytes`)
  })
}
