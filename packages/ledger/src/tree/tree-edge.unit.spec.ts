import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { merkleRoot } from '../proof/merkle-tree.js'
import { decodeTreeEdge, edgeAppend, edgeRoot, EMPTY_TREE_EDGE, encodeTreeEdge, type StoredHash, type TreeEdge } from './tree-edge.js'

const sha256 = (...parts: Uint8Array[]) => {
  const hash = createHash('sha256')
  for (const part of parts) hash.update(part)
  return new Uint8Array(hash.digest())
}
const utf8 = (text: string) => new TextEncoder().encode(text)
const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex')
const parent = (left: Uint8Array, right: Uint8Array) => sha256(Uint8Array.of(1), left, right)
/** Leaf i: SHA-256(0x00 ‖ SHA-256("entry i")), as the log's leaves are (an entry is a commitment). */
const leafAt = (i: number) => sha256(Uint8Array.of(0), sha256(utf8(`entry ${i}`)))
const LEAVES = Array.from({ length: 300 }, (_, i) => leafAt(i))
/** merkleRoot of each prefix: the naive reference every chunking is checked against. */
const ROOTS = Array.from({ length: 301 }, (_, n) => hex(merkleRoot(LEAVES.slice(0, n))))

/** A small seeded generator (mulberry32), so "random" chunkings are the same on every run. */
function seeded(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

type Chunking = (n: number) => number[]
const CHUNKINGS: Array<[string, Chunking]> = [
  ['one at a time', (n) => Array.from({ length: n }, () => 1)],
  ['all at once', (n) => (n === 0 ? [] : [n])],
  [
    'random chunks',
    (n) => {
      const random = seeded(n * 7919 + 1)
      const chunks: number[] = []
      for (let left = n; left > 0; ) {
        const chunk = Math.min(left, 1 + Math.floor(random() * (random() < 0.2 ? 300 : 9)))
        chunks.push(chunk)
        left -= chunk
      }
      return chunks
    },
  ],
]

/**
 * The tile hashes that appending leaves [from, to) completes, by the definition: MTH of each
 * 256^l-leaf block that ends in that range (memoised: the chunkings ask for the same ranges).
 */
const EXPECTED = new Map<string, string[]>()
function expectedStored(leaves: readonly Uint8Array[], from: number, to: number): string[] {
  const key = `${leaves.length}:${from}-${to}`
  const known = EXPECTED.get(key)
  if (known !== undefined) return known
  const out: string[] = []
  EXPECTED.set(key, out)
  for (let height = 0; 2 ** height <= to; height += 8) {
    const span = 2 ** height
    for (let index = Math.floor(from / span); (index + 1) * span <= to; index++) {
      if ((index + 1) * span <= from) continue
      out.push(`${height}/${index}/${hex(merkleRoot(leaves.slice(index * span, (index + 1) * span)))}`)
    }
  }
  return out.sort()
}
const keys = (stored: readonly StoredHash[]) => stored.map((s) => `${s.height}/${s.index}/${hex(s.hash)}`).sort()
const ones = (n: number) => n.toString(2).split('').filter((b) => b === '1').length

describe('edgeAppend and edgeRoot', () => {
  it('the empty tree: no nodes, SHA-256 of nothing', () => {
    expect(EMPTY_TREE_EDGE).toEqual({ size: 0, nodes: [] })
    expect(hex(edgeRoot(EMPTY_TREE_EDGE))).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855')
    expect(edgeAppend(EMPTY_TREE_EDGE, [])).toEqual({ edge: EMPTY_TREE_EDGE, stored: [] })
  })

  /** The certificate-transparency test data: 8 leaf inputs and the root of each prefix (RFC 6962 test vectors). */
  const CT_INPUTS = ['', '00', '10', '2021', '3031', '40414243', '5051525354555657', '606162636465666768696a6b6c6d6e6f']
  const CT_ROOTS = [
    '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
    'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
    'aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77',
    'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    '4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4',
    '76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef',
    'ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c',
    '5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328',
  ]
  it('the certificate-transparency roots of 1…8 leaves, appended one at a time', () => {
    let edge = EMPTY_TREE_EDGE
    CT_INPUTS.forEach((input, i) => {
      edge = edgeAppend(edge, [sha256(Uint8Array.of(0), Buffer.from(input, 'hex'))]).edge
      expect(hex(edgeRoot(edge))).toBe(CT_ROOTS[i])
    })
  })

  it.each(CHUNKINGS)('every size 1…300 (%s): the root is merkleRoot, the edge one node per 1 bit', (_, chunking) => {
    for (let n = 1; n <= 300; n++) {
      let edge: TreeEdge = EMPTY_TREE_EDGE
      const stored: StoredHash[] = []
      for (const chunk of chunking(n)) {
        const from = edge.size
        const grown = edgeAppend(edge, LEAVES.slice(from, from + chunk))
        // Each append reports exactly the tile hashes it completed, no more, none twice.
        expect(keys(grown.stored)).toEqual(expectedStored(LEAVES, from, from + chunk))
        stored.push(...grown.stored)
        edge = grown.edge
      }
      expect(edge.size).toBe(n)
      expect(edge.nodes.length).toBe(ones(n))
      expect(hex(edgeRoot(edge))).toBe(ROOTS[n])
      expect(keys(stored)).toEqual(expectedStored(LEAVES, 0, n))
    }
  })

  it('the nodes are the perfect subtrees of the size, largest first', () => {
    const { edge } = edgeAppend(EMPTY_TREE_EDGE, LEAVES.slice(0, 299)) // 299 = 256 + 32 + 8 + 2 + 1
    expect(edge.nodes.map(hex)).toEqual(
      [
        [0, 256],
        [256, 288],
        [288, 296],
        [296, 298],
        [298, 299],
      ].map(([a, b]) => hex(merkleRoot(LEAVES.slice(a, b)))),
    )
  })

  it('the stored hashes of one append come in the order they close: each leaf, then what it completes', () => {
    const { edge } = edgeAppend(EMPTY_TREE_EDGE, LEAVES.slice(0, 254))
    const { stored } = edgeAppend(edge, LEAVES.slice(254, 258))
    expect(stored.map((s) => [s.height, s.index])).toEqual([
      [0, 254],
      [0, 255],
      [8, 0],
      [0, 256],
      [0, 257],
    ])
    expect(stored[2]?.hash).toEqual(merkleRoot(LEAVES.slice(0, 256)))
  })

  it('leaves its input edge as it was', () => {
    const before = edgeAppend(EMPTY_TREE_EDGE, LEAVES.slice(0, 7)).edge
    const copy = { size: before.size, nodes: before.nodes.map((n) => Uint8Array.from(n)) }
    edgeAppend(before, LEAVES.slice(7, 20))
    expect(before).toEqual(copy)
  })

  it('65,537 leaves in chunks of 1,000 and at once: the roots at 65,535 / 65,536 / 65,537 and the level-1 and level-2 tile hashes', () => {
    const leaves = Array.from({ length: 65_537 }, (_, i) => leafAt(i))
    const roots = new Map<number, string>()
    const stored: StoredHash[] = []
    let edge: TreeEdge = EMPTY_TREE_EDGE
    for (const chunk of [65_000, 535, 1, 1]) {
      for (let done = 0; done < chunk; done += 1000) {
        const grown = edgeAppend(edge, leaves.slice(edge.size, edge.size + Math.min(1000, chunk - done)))
        stored.push(...grown.stored)
        edge = grown.edge
      }
      roots.set(edge.size, hex(edgeRoot(edge)))
    }
    const atOnce = edgeAppend(EMPTY_TREE_EDGE, leaves)
    expect(atOnce.edge).toEqual(edge)
    expect(keys(atOnce.stored)).toEqual(keys(stored))
    for (const size of [65_535, 65_536, 65_537]) expect(roots.get(size)).toBe(hex(merkleRoot(leaves.slice(0, size))))
    const byHeight = (h: number) => stored.filter((s) => s.height === h)
    expect(byHeight(0).length).toBe(65_537)
    expect(byHeight(8).map((s) => s.index)).toEqual(Array.from({ length: 256 }, (_, i) => i))
    expect(byHeight(8)[255]?.hash).toEqual(merkleRoot(leaves.slice(255 * 256, 65_536)))
    expect(byHeight(16).map((s) => [s.index, hex(s.hash)])).toEqual([[0, roots.get(65_536)]])
    expect(stored.length).toBe(65_537 + 256 + 1)
  })
})

describe('sizes past 2^32 (arithmetic, not 32-bit bit operators)', () => {
  /** An edge of `size` with made-up nodes: appending needs only the edge, never the leaves. */
  const syntheticEdge = (size: number): TreeEdge => ({ size, nodes: Array.from({ length: ones(size) }, (_, i) => sha256(utf8(`node ${i}`))) })
  const foldRight = (nodes: readonly Uint8Array[]) => nodes.reduceRight((acc, node) => parent(node, acc))

  it.each([
    // 2^33 − 1 leaves: the next one closes subtrees at every height up to 33.
    [2 ** 33 - 1, [[0, 2 ** 33 - 1], [8, 2 ** 25 - 1], [16, 2 ** 17 - 1], [24, 2 ** 9 - 1], [32, 1]]],
    [2 ** 32 + 255, [[0, 2 ** 32 + 255], [8, 2 ** 24]]],
    [2 ** 40, [[0, 2 ** 40]]],
    [Number.MAX_SAFE_INTEGER - 1, [[0, Number.MAX_SAFE_INTEGER - 1]]],
  ])('appending one leaf to %i', (size, expected) => {
    const edge = syntheticEdge(size)
    const leaf = leafAt(0)
    const { edge: grown, stored } = edgeAppend(edge, [leaf])
    expect(stored.map((s) => [s.height, s.index])).toEqual(expected)
    expect(grown.size).toBe(size + 1)
    expect(grown.nodes.length).toBe(ones(size + 1))
    // The new root is the old nodes with the leaf folded in from the right.
    expect(edgeRoot(grown)).toEqual(foldRight([...edge.nodes, leaf]))
    expect(edgeRoot(edge)).toEqual(foldRight(edge.nodes))
  })

  it('refuses to grow past 2^53 − 1', () => {
    expect(() => edgeAppend(syntheticEdge(Number.MAX_SAFE_INTEGER - 1), [leafAt(0), leafAt(1)])).toThrow(RangeError)
  })
})

describe('malformed edges and leaves are refused', () => {
  const one = edgeAppend(EMPTY_TREE_EDGE, [leafAt(0)]).edge
  it.each([
    ['a size with more 1 bits than nodes', { size: 3, nodes: one.nodes }],
    ['a size with fewer 1 bits than nodes', { size: 2, nodes: [leafAt(0), leafAt(1)] }],
    ['a negative size', { size: -1, nodes: [] }],
    ['a fractional size', { size: 1.5, nodes: [leafAt(0)] }],
    ['a node of 31 bytes', { size: 1, nodes: [new Uint8Array(31)] }],
  ])('%s', (_, edge) => {
    expect(() => edgeAppend(edge, [leafAt(1)])).toThrow()
    expect(() => edgeRoot(edge)).toThrow()
    expect(() => encodeTreeEdge(edge)).toThrow()
  })

  it.each([
    ['31 bytes', new Uint8Array(31)],
    ['33 bytes', new Uint8Array(33)],
    ['not bytes', 'leaf' as unknown as Uint8Array],
  ])('a leaf hash of %s', (_, leaf) => {
    expect(() => edgeAppend(one, [leafAt(1), leaf])).toThrow(TypeError)
  })
})

describe('encodeTreeEdge / decodeTreeEdge', () => {
  it('round-trips every size 0…300: 32 bytes per 1 bit of the size', () => {
    let edge: TreeEdge = EMPTY_TREE_EDGE
    for (let n = 0; n <= 300; n++) {
      if (n > 0) edge = edgeAppend(edge, [LEAVES[n - 1] as Uint8Array]).edge
      const bytes = encodeTreeEdge(edge)
      expect(bytes.length).toBe(32 * ones(n))
      expect(Buffer.from(bytes)).toEqual(Buffer.concat(edge.nodes))
      const back = decodeTreeEdge(n, bytes)
      expect(back).toEqual(edge)
      expect(hex(edgeRoot(back))).toBe(hex(edgeRoot(edge)))
    }
  })

  it('a decoded edge owns its bytes', () => {
    const bytes = encodeTreeEdge(edgeAppend(EMPTY_TREE_EDGE, LEAVES.slice(0, 3)).edge)
    const edge = decodeTreeEdge(3, bytes)
    const root = edgeRoot(edge)
    bytes.fill(0)
    expect(edgeRoot(edge)).toEqual(root)
  })

  it.each([
    [1, new Uint8Array(0)],
    [1, new Uint8Array(64)],
    [3, new Uint8Array(32)],
    [3, new Uint8Array(65)],
    [0, new Uint8Array(32)],
    [-1, new Uint8Array(0)],
    [2 ** 53, new Uint8Array(32)],
  ])('refuses size %i with %o bytes', (size, bytes) => {
    expect(() => decodeTreeEdge(size, bytes)).toThrow(RangeError)
  })
})
