import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { inclusionProof, merkleRoot, verifyInclusion } from '../proof/merkle-tree.js'
import type { HashTile, TileReader } from './tile-hash-reader.js'
import { edgeAppend, edgeRoot, EMPTY_TREE_EDGE } from './tree-edge.js'
import { consistencyProofFromTiles, inclusionProofFromTiles, perfectSubtrees, treeRootFromTiles, verifyConsistency } from './tree-proofs.js'

const sha256 = (...parts: Uint8Array[]) => {
  const hash = createHash('sha256')
  for (const part of parts) hash.update(part)
  return new Uint8Array(hash.digest())
}
const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex')
const unhex = (text: string) => new Uint8Array(Buffer.from(text, 'hex'))
const leafAt = (i: number) => sha256(Uint8Array.of(0), sha256(new TextEncoder().encode(`entry ${i}`)))
const EMPTY_ROOT = unhex('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855')
const flipByte = (bytes: Uint8Array, at: number) => {
  const copy = Uint8Array.from(bytes)
  copy[at] = (copy[at] as number) ^ 0x01
  return copy
}

/** A log's tile store, filled from what edgeAppend reported, and served for one tree size at a time. */
class TileStore {
  private readonly byHeight = new Map<number, Uint8Array[]>()
  constructor(readonly leaves: readonly Uint8Array[]) {
    let edge = EMPTY_TREE_EDGE
    // Appended in uneven chunks, as seals would.
    for (let at = 0, chunk = 1; at < leaves.length; at += chunk, chunk = (chunk * 7 + 3) % 1000) {
      const grown = edgeAppend(edge, leaves.slice(at, at + chunk))
      for (const { height, index, hash } of grown.stored) {
        const row = this.byHeight.get(height) ?? []
        if (row[index] !== undefined) throw new Error(`hash (${height}, ${index}) stored twice`)
        row[index] = hash
        this.byHeight.set(height, row)
      }
      edge = grown.edge
    }
  }

  /**
   * The tiles a tree of `size` leaves has: full ones, and each level's partial tile sliced to the
   * width `size` gives it; asking any other width is an error, so a wrong request fails the test.
   */
  reader(size: number, calls: HashTile[][] = []): TileReader {
    return async (tiles) => {
      calls.push(tiles)
      const seen = new Set<string>()
      return tiles.map(({ level, index, width }) => {
        const key = `${level}/${index}`
        if (seen.has(key)) throw new Error(`tile ${key} asked twice in one call`)
        seen.add(key)
        const wanted = Math.min(256, Math.floor(size / 256 ** level) - 256 * index)
        if (width !== wanted) throw new Error(`tile ${key}: asked width ${width}, the tree of ${size} has ${wanted}`)
        const hashes = (this.byHeight.get(8 * level) ?? []).slice(256 * index, 256 * index + width)
        if (hashes.length !== width || hashes.includes(undefined as unknown as Uint8Array)) throw new Error(`tile ${key}.p/${width} is not stored`)
        return Buffer.concat(hashes)
      })
    }
  }
}

const N = 300
const LEAVES = Array.from({ length: N }, (_, i) => leafAt(i))
const STORE = new TileStore(LEAVES)
const ROOTS = Array.from({ length: N + 1 }, (_, n) => merkleRoot(LEAVES.slice(0, n)))

/** RFC 6962 §2.1.2 SUBPROOF, transcribed literally over the leaves, with merkleRoot as MTH: the independent reference. */
function referenceConsistency(m: number, leaves: readonly Uint8Array[]): Uint8Array[] {
  const subproof = (m: number, d: readonly Uint8Array[], b: boolean): Uint8Array[] => {
    if (m === d.length) return b ? [] : [merkleRoot(d)]
    let k = 1
    while (k * 2 < d.length) k *= 2
    return m <= k ? [...subproof(m, d.slice(0, k), b), merkleRoot(d.slice(k))] : [...subproof(m - k, d.slice(k), false), merkleRoot(d.slice(0, k))]
  }
  return m === 0 || m === leaves.length ? [] : subproof(m, leaves, true)
}

/**
 * Which (index, size) and (old, new) pairs are checked. Every pair up to 300 would be ~45,000 of
 * each, each proof refolding up to 255 hashes of its level-0 tile: too slow for a unit file. So:
 * every pair for the small trees and around the boundaries (128, 129, 256, 257), every size
 * with a spread of indexes, and a seeded random sample.
 */
const DENSE = new Set([...Array.from({ length: 32 }, (_, i) => i + 1), 128, 129, 256, 257])
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
/** (x, n) for n = 1…300 and some or all x in 1…n, per DENSE. */
function pairs(sample: number, seed: number): Array<[number, number]> {
  const out: Array<[number, number]> = []
  const random = seeded(seed)
  for (let n = 1; n <= N; n++) {
    const xs = new Set<number>()
    if (DENSE.has(n)) for (let x = 1; x <= n; x++) xs.add(x)
    else {
      for (const x of [1, 2, 128, 255, 256, Math.floor(n / 2), n - 1, n]) xs.add(x)
      for (let s = 0; s < sample; s++) xs.add(1 + Math.floor(random() * n))
    }
    for (const x of xs) if (x >= 1 && x <= n) out.push([x, n])
  }
  return out
}
// Inclusion: index 0…n−1, written as x = index + 1 so both tables share `pairs`.
const INCLUSION_PAIRS = pairs(2, 1).map(([x, n]) => [x - 1, n] as [number, number])
const CONSISTENCY_PAIRS = pairs(2, 2)

describe('perfectSubtrees', () => {
  it.each([
    [0, 0, []],
    [0, 1, [[0, 0]]],
    [0, 300, [[8, 0], [5, 8], [3, 36], [2, 74]]],
    [5, 13, [[0, 5], [1, 3], [2, 2], [0, 12]]],
    [256, 300, [[5, 8], [3, 36], [2, 74]]],
    [2 ** 40, 2 ** 40 + 2 ** 33 + 5, [[33, 128], [2, 2 ** 38 + 2 ** 31], [0, 2 ** 40 + 2 ** 33 + 4]]],
  ])('[%i, %i)', (start, end, expected) => {
    expect(perfectSubtrees(start, end).map((s) => [s.height, s.index])).toEqual(expected)
  })

  it.each([
    [3, 2],
    [-1, 0],
    [0, 1.5],
  ])('refuses [%s, %s)', (start, end) => {
    expect(() => perfectSubtrees(start, end)).toThrow(RangeError)
  })
})

describe('treeRootFromTiles', () => {
  it('every size 0…300 is merkleRoot, from one reader call (none for the empty tree)', async () => {
    for (let n = 0; n <= N; n++) {
      const calls: HashTile[][] = []
      expect(hex(await treeRootFromTiles(n, STORE.reader(n, calls)))).toBe(hex(ROOTS[n] as Uint8Array))
      expect(calls.length).toBe(n === 0 ? 0 : 1)
    }
  })

  it('refuses a size that is not a count', async () => {
    await expect(treeRootFromTiles(-1, STORE.reader(0))).rejects.toThrow(RangeError)
    await expect(treeRootFromTiles(2 ** 53, STORE.reader(0))).rejects.toThrow(RangeError)
  })
})

describe('inclusionProofFromTiles', () => {
  it(`${INCLUSION_PAIRS.length} (index, size) pairs up to 300: verifyInclusion accepts each, one reader call each; every 7th equals the naive inclusionProof`, async () => {
    let compared = 0
    for (const [k, [index, n]] of INCLUSION_PAIRS.entries()) {
      const calls: HashTile[][] = []
      const proof = await inclusionProofFromTiles(index, n, STORE.reader(n, calls))
      expect(calls.length).toBe(n === 1 ? 0 : 1)
      expect(verifyInclusion(LEAVES[index] as Uint8Array, index, n, proof, ROOTS[n] as Uint8Array), `(${index}, ${n})`).toBe(true)
      if (k % 7 === 0) {
        expect(proof.map(hex), `(${index}, ${n})`).toEqual(inclusionProof(LEAVES.slice(0, n), index).map(hex))
        compared++
      }
    }
    expect(compared).toBeGreaterThan(400)
  })

  // The certificate-transparency test data (RFC 6962's reference implementation): leaf inputs,
  // and audit paths of (index, size).
  const CT_INPUTS = ['', '00', '10', '2021', '3031', '40414243', '5051525354555657', '606162636465666768696a6b6c6d6e6f']
  const CT_LEAVES = CT_INPUTS.map((input) => sha256(Uint8Array.of(0), unhex(input)))
  const CT_STORE = new TileStore(CT_LEAVES)
  it.each([
    [0, 1, []],
    [0, 8, ['96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7', '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e', '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4']],
    [5, 8, ['bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b', 'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0', 'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7']],
    [2, 3, ['fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125']],
    [1, 5, ['6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d', '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e', 'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b']],
  ])('the certificate-transparency vector: leaf %i of %i', async (index, n, path) => {
    expect((await inclusionProofFromTiles(index, n, CT_STORE.reader(n))).map(hex)).toEqual(path)
  })

  it.each([
    [0, 0],
    [3, 3],
    [-1, 3],
    [1.5, 3],
    [0, 2 ** 53],
  ])('refuses leaf %s of a tree of %s', async (index, n) => {
    await expect(inclusionProofFromTiles(index, n, STORE.reader(N))).rejects.toThrow(RangeError)
  })
})

describe('consistencyProofFromTiles and verifyConsistency', () => {
  it(`${CONSISTENCY_PAIRS.length} (old, new) pairs up to 300: verifyConsistency accepts each, one reader call at most; every 5th equals RFC 6962 SUBPROOF transcribed over the leaves`, async () => {
    let compared = 0
    for (const [k, [m, n]] of CONSISTENCY_PAIRS.entries()) {
      const calls: HashTile[][] = []
      const proof = await consistencyProofFromTiles(m, n, STORE.reader(n, calls))
      expect(calls.length).toBe(m === n ? 0 : 1)
      expect(verifyConsistency(m, n, proof, ROOTS[m] as Uint8Array, ROOTS[n] as Uint8Array), `(${m}, ${n})`).toBe(true)
      if (k % 5 === 0) {
        expect(proof.map(hex), `(${m}, ${n})`).toEqual(referenceConsistency(m, LEAVES.slice(0, n)).map(hex))
        compared++
      }
    }
    expect(compared).toBeGreaterThan(500)
  })

  const CT_INPUTS = ['', '00', '10', '2021', '3031', '40414243', '5051525354555657', '606162636465666768696a6b6c6d6e6f']
  const CT_LEAVES = CT_INPUTS.map((input) => sha256(Uint8Array.of(0), unhex(input)))
  const CT_STORE = new TileStore(CT_LEAVES)
  it.each([
    [1, 1, []],
    [1, 8, ['96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7', '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e', '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4']],
    [6, 8, ['0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a', 'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0', 'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7']],
    [2, 5, ['5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e', 'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b']],
  ])('the certificate-transparency vector: %i → %i', async (m, n, path) => {
    const proof = await consistencyProofFromTiles(m, n, CT_STORE.reader(n))
    expect(proof.map(hex)).toEqual(path)
    const root = (size: number) => merkleRoot(CT_LEAVES.slice(0, size))
    expect(verifyConsistency(m, n, proof, root(m), root(n))).toBe(true)
  })

  it('from the empty tree or to the same size: an empty proof and no reads', async () => {
    const calls: HashTile[][] = []
    expect(await consistencyProofFromTiles(0, 300, STORE.reader(300, calls))).toEqual([])
    expect(await consistencyProofFromTiles(0, 0, STORE.reader(0, calls))).toEqual([])
    expect(await consistencyProofFromTiles(17, 17, STORE.reader(17, calls))).toEqual([])
    expect(calls).toEqual([])
  })

  it.each([
    [5, 3],
    [-1, 3],
    [1, 2.5],
    [1, 2 ** 53],
  ])('refuses %s → %s', async (m, n) => {
    await expect(consistencyProofFromTiles(m, n, STORE.reader(N))).rejects.toThrow(RangeError)
  })
})

describe('verifyConsistency refuses what does not prove consistency', () => {
  // Pairs whose proofs have several hashes, across the tile boundary and power-of-two old sizes.
  const CASES: Array<[number, number]> = [
    [1, 2],
    [3, 7],
    [4, 8],
    [6, 8],
    [7, 300],
    [100, 257],
    [128, 300],
    [255, 256],
    [256, 257],
    [257, 300],
    [299, 300],
  ]
  const proofOf = (m: number, n: number) => consistencyProofFromTiles(m, n, STORE.reader(n))
  const verify = (m: number, n: number, proof: readonly Uint8Array[]) => verifyConsistency(m, n, proof, ROOTS[m] as Uint8Array, ROOTS[n] as Uint8Array)

  it.each(CASES)('%i → %i: a changed byte anywhere in any hash', async (m, n) => {
    const proof = await proofOf(m, n)
    expect(verify(m, n, proof)).toBe(true)
    for (let j = 0; j < proof.length; j++) {
      for (const at of [0, 17, 31]) {
        const bad = proof.map((h, k) => (k === j ? flipByte(h, at) : h))
        expect(verify(m, n, bad), `hash ${j}, byte ${at}`).toBe(false)
      }
    }
    expect(verifyConsistency(m, n, proof, flipByte(ROOTS[m] as Uint8Array, 5), ROOTS[n] as Uint8Array)).toBe(false)
    expect(verifyConsistency(m, n, proof, ROOTS[m] as Uint8Array, flipByte(ROOTS[n] as Uint8Array, 5))).toBe(false)
  })

  it.each(CASES)('%i → %i: truncated, extended, reordered', async (m, n) => {
    const proof = await proofOf(m, n)
    expect(verify(m, n, proof.slice(0, -1))).toBe(false)
    expect(verify(m, n, proof.slice(1))).toBe(false)
    expect(verify(m, n, [])).toBe(false)
    expect(verify(m, n, [...proof, proof[proof.length - 1] as Uint8Array])).toBe(false)
    expect(verify(m, n, [...proof, new Uint8Array(32)])).toBe(false)
    if (proof.length > 1) expect(verify(m, n, [...proof].reverse())).toBe(false)
  })

  it.each(CASES)('%i → %i: the same proof for other sizes (with their own roots) holds only where it is their proof too', async (m, n) => {
    const proof = await proofOf(m, n)
    let refused = 0
    for (const [m2, n2] of [[m - 1, n], [m + 1, n], [m, n - 1], [m, n + 1], [m - 1, n - 1], [m + 1, n + 1], [n, m]] as Array<[number, number]>) {
      if (m2 < 1 || n2 > N || m2 >= n2) continue
      const theirs = referenceConsistency(m2, LEAVES.slice(0, n2))
      const same = theirs.length === proof.length && theirs.every((h, i) => hex(h) === hex(proof[i] as Uint8Array))
      const result = verifyConsistency(m2, n2, proof, ROOTS[m2] as Uint8Array, ROOTS[n2] as Uint8Array)
      expect(result, `as ${m2} → ${n2}`).toBe(same)
      if (!result) refused++
    }
    expect(refused).toBeGreaterThan(0)
  })

  // The verifier checks the proof's shape against the sizes it is told, so those must come from
  // the signed checkpoints: a proof can fit a neighbouring size whose proof has the same shape
  // (100 → 258 needs the same hashes as 100 → 257 below 256, and 257 and 258 differ only in the
  // last subtree, whose hash is the new root's business).
  it.each([
    [99, 257, false],
    [101, 257, false],
    [100, 256, false],
    [100, 258, true],
    [257, 100, false],
    [100, 100, false],
    // A larger tree needs more hashes: a proof that runs out before the tree's top is refused.
    [100, 600, false],
    [100, 2 ** 40, false],
  ])('the proof 100 → 257 with those roots, told the sizes %i → %i: %s', async (m2, n2, expected) => {
    const proof = await proofOf(100, 257)
    expect(verifyConsistency(m2, n2, proof, ROOTS[100] as Uint8Array, ROOTS[257] as Uint8Array)).toBe(expected)
  })

  it.each<[string, number, number, unknown, unknown, unknown, boolean]>([
    ['0 → n: empty proof, empty-tree old root', 0, 300, [], EMPTY_ROOT, ROOTS[300], true],
    ['0 → n: any new root (nothing to prove)', 0, 5, [], EMPTY_ROOT, new Uint8Array(32), true],
    ['0 → n: a proof line', 0, 300, [ROOTS[1]], EMPTY_ROOT, ROOTS[300], false],
    ['0 → n: an old root that is not the empty tree', 0, 300, [], ROOTS[1], ROOTS[300], false],
    ['0 → 0: the empty tree both sides', 0, 0, [], EMPTY_ROOT, EMPTY_ROOT, true],
    ['0 → 0: a non-empty root', 0, 0, [], ROOTS[1], ROOTS[1], false],
    ['n → n: empty proof, same root', 17, 17, [], ROOTS[17], ROOTS[17], true],
    ['n → n: different roots', 17, 17, [], ROOTS[17], ROOTS[16], false],
    ['n → n: a proof line', 17, 17, [ROOTS[1]], ROOTS[17], ROOTS[17], false],
    ['m < n: empty proof', 16, 17, [], ROOTS[16], ROOTS[17], false],
    ['m < n: empty proof, old size not a power of two', 3, 7, [], ROOTS[3], ROOTS[7], false],
    ['old larger than new', 17, 16, [], ROOTS[17], ROOTS[16], false],
    ['negative old size', -1, 16, [], ROOTS[16], ROOTS[16], false],
    ['fractional size', 1.5, 16, [LEAVES[1]], ROOTS[1], ROOTS[16], false],
    ['NaN size', Number.NaN, 16, [], ROOTS[1], ROOTS[16], false],
    ['size past 2^53', 1, 2 ** 53, [LEAVES[1]], ROOTS[1], ROOTS[2], false],
    ['a 31-byte hash line', 1, 2, [new Uint8Array(31)], ROOTS[1], ROOTS[2], false],
    ['a hash line that is not bytes', 1, 2, ['00'.repeat(32)], ROOTS[1], ROOTS[2], false],
    ['a proof that is not an array', 1, 2, LEAVES[1], ROOTS[1], ROOTS[2], false],
    ['an old root of 33 bytes', 1, 2, [LEAVES[1]], new Uint8Array(33), ROOTS[2], false],
    ['a missing new root', 1, 2, [LEAVES[1]], ROOTS[1], undefined, false],
  ])('%s', (_, m, n, proof, oldRoot, newRoot, expected) => {
    expect(verifyConsistency(m, n, proof as Uint8Array[], oldRoot as Uint8Array, newRoot as Uint8Array)).toBe(expected)
    // Malformed or not, nothing throws.
  })

  it('4 → 8 by hand: the proof is MTH(4:8) alone; it does not reach the top of a tree told to be 16', () => {
    const mth48 = merkleRoot(LEAVES.slice(4, 8))
    expect(verifyConsistency(4, 8, [mth48], ROOTS[4] as Uint8Array, ROOTS[8] as Uint8Array)).toBe(true)
    expect(verifyConsistency(4, 16, [mth48], ROOTS[4] as Uint8Array, ROOTS[8] as Uint8Array)).toBe(false)
  })

  it('1 → 2 by hand: the proof is leaf 1, and the power-of-two old root is left out', () => {
    expect(verifyConsistency(1, 2, [LEAVES[1] as Uint8Array], LEAVES[0] as Uint8Array, ROOTS[2] as Uint8Array)).toBe(true)
    expect(verifyConsistency(1, 2, [LEAVES[0] as Uint8Array, LEAVES[1] as Uint8Array], LEAVES[0] as Uint8Array, ROOTS[2] as Uint8Array)).toBe(false)
  })
})

describe('a tree of 65,537 leaves: level-1 and level-2 tiles', () => {
  const leaves = Array.from({ length: 65_537 }, (_, i) => leafAt(i))
  const store = new TileStore(leaves)
  const SIZES = [65_535, 65_536, 65_537]
  const OLD = [1, 255, 256, 257, 4_096, 32_768, 40_000, 65_280, 65_535, 65_536, 65_537]
  // The three sizes' roots by the naive reference; the other old sizes' from the edge (itself
  // checked against merkleRoot in tree-edge.unit.spec.ts), to keep this file fast.
  const roots = new Map(SIZES.map((n) => [n, merkleRoot(leaves.slice(0, n))]))
  for (const m of OLD) if (!roots.has(m)) roots.set(m, edgeRoot(edgeAppend(EMPTY_TREE_EDGE, leaves.slice(0, m)).edge))

  it.each(SIZES)('the root of %i leaves', async (n) => {
    const calls: HashTile[][] = []
    expect(hex(await treeRootFromTiles(n, store.reader(n, calls)))).toBe(hex(roots.get(n) as Uint8Array))
    // 65,535: the level-0 and level-1 partial tiles; 65,536: the level-2 tile; 65,537: that and a leaf.
    expect(calls[0]?.map((t) => `${t.level}/${t.index}.${t.width}`)).toEqual(
      { 65_535: ['1/0.255', '0/255.255'], 65_536: ['2/0.1'], 65_537: ['2/0.1', '0/256.1'] }[n],
    )
  })

  const INDEXES = [0, 1, 255, 256, 32_767, 32_768, 65_279, 65_280, 65_534, 65_535, 65_536]
  it.each(SIZES)('inclusion proofs in the tree of %i leaves, across its tiles', async (n) => {
    for (const index of INDEXES.filter((i) => i < n)) {
      const proof = await inclusionProofFromTiles(index, n, store.reader(n))
      expect(verifyInclusion(leaves[index] as Uint8Array, index, n, proof, roots.get(n) as Uint8Array), `leaf ${index}`).toBe(true)
    }
  })

  it('inclusion of leaf 65,280 of 65,537 equals the naive inclusionProof', async () => {
    expect((await inclusionProofFromTiles(65_280, 65_537, store.reader(65_537))).map(hex)).toEqual(inclusionProof(leaves, 65_280).map(hex))
  })

  it.each(SIZES)('consistency proofs into the tree of %i leaves', async (n) => {
    const rootOf = (m: number) => roots.get(m) as Uint8Array
    for (const m of OLD.filter((m) => m <= n)) {
      const proof = await consistencyProofFromTiles(m, n, store.reader(n))
      expect(verifyConsistency(m, n, proof, rootOf(m), rootOf(n)), `${m} → ${n}`).toBe(true)
      if (proof.length > 0) expect(verifyConsistency(m, n, [...proof.slice(0, -1), flipByte(proof[proof.length - 1] as Uint8Array, 0)], rootOf(m), rootOf(n))).toBe(false)
    }
  })

  it('consistency 40,000 → 65,537 equals RFC 6962 SUBPROOF over the leaves', async () => {
    expect((await consistencyProofFromTiles(40_000, 65_537, store.reader(65_537))).map(hex)).toEqual(referenceConsistency(40_000, leaves).map(hex))
  })
})

describe('trees past 2^32 leaves (arithmetic, not 32-bit bit operators)', () => {
  // A tree whose every leaf is the same hash: every perfect subtree of height h then has the
  // same hash H_h, so a consistent tile of any level is `width` copies of H_{8·level} — a real
  // tree of 2^40 leaves, servable without building it.
  const H: Uint8Array[] = [leafAt(0)]
  for (let h = 1; h <= 52; h++) H.push(sha256(Uint8Array.of(1), H[h - 1] as Uint8Array, H[h - 1] as Uint8Array))
  const uniform = (size: number, calls: HashTile[][] = []): TileReader => async (tiles) => {
    calls.push(tiles)
    return tiles.map(({ level, index, width }) => {
      const wanted = Math.min(256, Math.floor(size / 256 ** level) - 256 * index)
      if (width !== wanted) throw new Error(`tile ${level}/${index}: asked width ${width}, the tree of ${size} has ${wanted}`)
      return Buffer.concat(Array.from({ length: width }, () => H[8 * level] as Uint8Array))
    })
  }
  /** The root of the uniform tree of `size`: its perfect subtrees (one per 1 bit), folded right to left. */
  const uniformRoot = (size: number) => {
    const heights = [...size.toString(2)].map((b, i, all) => (b === '1' ? all.length - 1 - i : -1)).filter((h) => h >= 0)
    return heights.map((h) => H[h] as Uint8Array).reduceRight((acc, node) => sha256(Uint8Array.of(1), node, acc))
  }

  const BIG = [2 ** 32, 2 ** 32 + 1, 2 ** 40 + 2 ** 33 + 5, 2 ** 52 + 12_345, Number.MAX_SAFE_INTEGER]
  it.each(BIG)('the root, inclusion proofs and consistency proofs of a tree of %i leaves', async (n) => {
    const root = uniformRoot(n)
    expect(await treeRootFromTiles(n, uniform(n))).toEqual(root)
    for (const index of [0, 2 ** 31, 2 ** 32 - 1, 2 ** 32, n - 2, n - 1].filter((i) => i < n)) {
      const calls: HashTile[][] = []
      const proof = await inclusionProofFromTiles(index, n, uniform(n, calls))
      expect(calls.length).toBe(1)
      expect(verifyInclusion(H[0] as Uint8Array, index, n, proof, root), `leaf ${index}`).toBe(true)
      expect(verifyInclusion(H[0] as Uint8Array, index, n, proof.slice(0, -1), root)).toBe(false)
    }
    for (const m of [1, 3, 2 ** 31 + 7, 2 ** 32 - 1, 2 ** 32, n - 1]) {
      const proof = await consistencyProofFromTiles(m, n, uniform(n))
      expect(verifyConsistency(m, n, proof, uniformRoot(m), root), `${m} → ${n}`).toBe(true)
      if (proof.length > 0) expect(verifyConsistency(m, n, proof.slice(0, -1), uniformRoot(m), root)).toBe(false)
    }
  })
})
