import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { merkleRoot } from '../proof/merkle-tree.js'
import { readSubtreeHashes, subtreeHashFromTile, subtreeInTile, type HashTile, type SubtreeCoordinates, type TileReader } from './tile-hash-reader.js'
import { edgeAppend, EMPTY_TREE_EDGE } from './tree-edge.js'

const sha256 = (...parts: Uint8Array[]) => {
  const hash = createHash('sha256')
  for (const part of parts) hash.update(part)
  return new Uint8Array(hash.digest())
}
const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex')
const leafAt = (i: number) => sha256(Uint8Array.of(0), sha256(new TextEncoder().encode(`entry ${i}`)))

const LEAVES = Array.from({ length: 600 }, (_, i) => leafAt(i))
/** The tile store: hashes by height, as edgeAppend reported them. */
const STORE = new Map<number, Uint8Array[]>()
for (const { height, index, hash } of edgeAppend(EMPTY_TREE_EDGE, LEAVES).stored) {
  const row = STORE.get(height) ?? []
  row[index] = hash
  STORE.set(height, row)
}

/**
 * Serves the tiles of the tree of `size` leaves as a log would: a full tile once it is full,
 * otherwise only the partial tile of the width `size` implies (anything else is an error here,
 * so a reader asking for the wrong width fails the test). Records each call.
 */
function tileServer(size: number, calls: HashTile[][] = []): TileReader {
  return async (tiles) => {
    calls.push(tiles)
    return tiles.map(({ level, index, width }) => {
      const atLevel = Math.floor(size / 256 ** level)
      const wanted = Math.min(256, atLevel - 256 * index)
      if (width !== wanted) throw new Error(`tile ${level}/${index}: asked width ${width}, the tree of ${size} has ${wanted}`)
      const hashes = (STORE.get(8 * level) ?? []).slice(256 * index, 256 * index + width)
      if (hashes.length !== width) throw new Error(`tile ${level}/${index}.p/${width} is not stored`)
      return Buffer.concat(hashes)
    })
  }
}
/** MTH of subtree (height, index) by the naive reference, memoised (the tests ask for the same ones per size). */
const MTH = new Map<string, Uint8Array>()
function mth(height: number, index: number): Uint8Array {
  const key = `${height}/${index}`
  let hash = MTH.get(key)
  if (hash === undefined) MTH.set(key, (hash = merkleRoot(LEAVES.slice(index * 2 ** height, (index + 1) * 2 ** height))))
  return hash
}

describe('subtreeInTile', () => {
  it.each([
    // [height, index] → [level, tile, offset, count]
    [0, 0, 0, 0, 0, 1],
    [0, 255, 0, 0, 255, 1],
    [0, 256, 0, 1, 0, 1],
    [3, 5, 0, 0, 40, 8],
    [7, 1, 0, 0, 128, 128],
    [7, 2, 0, 1, 0, 128],
    [8, 0, 1, 0, 0, 1],
    [9, 3, 1, 0, 6, 2],
    [15, 1, 1, 0, 128, 128],
    [16, 0, 2, 0, 0, 1],
    [16, 300, 2, 1, 44, 1],
    // Past 2^32: leaf 2^40 + 5 sits in level-0 tile 2^32 at offset 5.
    [0, 2 ** 40 + 5, 0, 2 ** 32, 5, 1],
    [40, 3, 5, 0, 3, 1],
    [52, 1, 6, 0, 16, 16],
  ])('subtree (%i, %i): level %i, tile %i, offset %i, %i hashes', (height, index, level, tile, offset, count) => {
    expect(subtreeInTile(height, index)).toEqual({ level, index: tile, offset, count })
  })

  it.each([
    [-1, 0],
    [53, 0],
    [1.5, 0],
    [0, -1],
    [0, 0.5],
    [0, 2 ** 53],
  ])('refuses (%s, %s)', (height, index) => {
    expect(() => subtreeInTile(height, index)).toThrow(RangeError)
  })
})

describe('subtreeHashFromTile', () => {
  const tile0 = Buffer.concat(LEAVES.slice(0, 256))
  const tile1 = Buffer.concat(LEAVES.slice(256, 512))
  it('every subtree of height 0…8 in the first two level-0 tiles and the level-1 tile is its MTH', () => {
    for (let height = 0; height <= 8; height++) {
      for (let index = 0; (index + 1) * 2 ** height <= 512; index++) {
        const place = subtreeInTile(height, index)
        const tile = height === 8 ? Buffer.concat([mth(8, 0), mth(8, 1)]) : place.index === 0 ? tile0 : tile1
        expect(hex(subtreeHashFromTile(tile, height, index))).toBe(hex(mth(height, index)))
      }
    }
  })

  it('works from a partial tile wide enough, and refuses one too narrow', () => {
    const partial = Buffer.concat(LEAVES.slice(0, 100))
    expect(subtreeHashFromTile(partial, 5, 2)).toEqual(mth(5, 2)) // leaves 64…95
    expect(() => subtreeHashFromTile(partial, 5, 3)).toThrow(RangeError) // leaves 96…127
    expect(() => subtreeHashFromTile(partial.subarray(0, 99 * 32 + 5), 0, 0)).toThrow(RangeError)
  })

  it('returns a copy, not a view into the tile', () => {
    const tile = Buffer.concat(LEAVES.slice(0, 4))
    const hash = subtreeHashFromTile(tile, 0, 1)
    tile.fill(0)
    expect(hash).toEqual(LEAVES[1])
  })
})

describe('readSubtreeHashes', () => {
  const SIZES = [...Array.from({ length: 300 }, (_, i) => i + 1), 511, 512, 513, 600]
  it('every perfect subtree of every tree of 1…300, 511…513 and 600 leaves: one reader call asking each tile once at the width the size has', async () => {
    for (const size of SIZES) {
      const wanted: SubtreeCoordinates[] = []
      for (let height = 0; 2 ** height <= size; height++) {
        for (let index = 0; (index + 1) * 2 ** height <= size; index++) wanted.push({ height, index })
      }
      const calls: HashTile[][] = []
      const hashes = await readSubtreeHashes(size, wanted, tileServer(size, calls))
      expect(calls.length).toBe(1)
      const asked = (calls[0] ?? []).map((t) => `${t.level}/${t.index}`)
      expect(new Set(asked).size).toBe(asked.length)
      // Every tile of the tree (the subtrees of height 8 ≤ h < 16 reach all level-1 tiles).
      expect(asked.length).toBe(Math.ceil(size / 256) + (size >= 256 ? 1 : 0))
      hashes.forEach((hash, i) => {
        const { height, index } = wanted[i] as SubtreeCoordinates
        expect(hex(hash)).toBe(hex(mth(height, index)))
      })
    }
  })

  it('answers in the order asked, duplicates included', async () => {
    const wanted = [
      { height: 0, index: 299 },
      { height: 8, index: 0 },
      { height: 0, index: 3 },
      { height: 0, index: 299 },
    ]
    const calls: HashTile[][] = []
    const hashes = await readSubtreeHashes(300, wanted, tileServer(300, calls))
    expect(hashes.map(hex)).toEqual([LEAVES[299], mth(8, 0), LEAVES[3], LEAVES[299]].map((h) => hex(h as Uint8Array)))
    expect(calls).toEqual([
      [
        { level: 0, index: 1, width: 44 },
        { level: 1, index: 0, width: 1 },
        { level: 0, index: 0, width: 256 },
      ],
    ])
  })

  it('asks nothing for nothing', async () => {
    const calls: HashTile[][] = []
    expect(await readSubtreeHashes(300, [], tileServer(300, calls))).toEqual([])
    expect(calls).toEqual([])
  })

  it('plans tiles of trees past 2^32 leaves by arithmetic', async () => {
    const size = 2 ** 40 + 2 ** 33 + 5
    const calls: HashTile[][] = []
    const zeros: TileReader = async (tiles) => {
      calls.push(tiles)
      return tiles.map((t) => new Uint8Array(t.width * 32))
    }
    await readSubtreeHashes(
      size,
      [
        { height: 40, index: 0 }, // level 5, tile 0: floor(size / 2^40) = 1 hash
        { height: 33, index: 128 }, // level 4, folding 2 hashes 256…257 of tile 1 (floor(size / 2^32) − 256 = 2 wide)
        { height: 0, index: size - 1 }, // the last leaf: level 0, tile floor((size − 1) / 256), 5 wide
        { height: 8, index: 2 ** 32 }, // level 1, tile 2^24: floor(size / 256) − 2^32 = 2^25 hashes remain, so full
      ],
      zeros,
    )
    expect(calls).toEqual([
      [
        { level: 5, index: 0, width: 1 },
        { level: 4, index: 1, width: 2 },
        { level: 0, index: Math.floor((size - 1) / 256), width: 5 },
        { level: 1, index: 2 ** 24, width: 256 },
      ],
    ])
  })

  it.each([
    [300, { height: 0, index: 300 }],
    [300, { height: 9, index: 0 }],
    [300, { height: 2, index: 75 }],
    [0, { height: 0, index: 0 }],
    [2 ** 52, { height: 52, index: 1 }],
  ])('refuses a subtree outside the tree of %i: %j', async (size, subtree) => {
    await expect(readSubtreeHashes(size, [subtree], tileServer(size))).rejects.toThrow(RangeError)
  })

  it.each<[string, TileReader]>([
    ['too few tiles', async () => []],
    ['too many tiles', async (tiles) => [...tiles, ...tiles].map((t) => new Uint8Array(t.width * 32))],
    ['a tile one hash short', async (tiles) => tiles.map((t) => new Uint8Array((t.width - 1) * 32))],
    ['a tile one byte long', async (tiles) => tiles.map((t) => new Uint8Array(t.width * 32 + 1))],
    ['a tile that is not bytes', async (tiles) => tiles.map(() => null as unknown as Uint8Array)],
  ])('refuses a reader answering %s', async (_, reader) => {
    await expect(readSubtreeHashes(300, [{ height: 0, index: 299 }, { height: 3, index: 0 }], reader)).rejects.toThrow(/tile/)
  })
})
