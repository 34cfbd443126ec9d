import { HASH_BYTES, interiorHash, isCount, powerOfTwo } from './tree-hash.js'
import { TILE_HEIGHT, TILE_WIDTH, tileWidthAt } from './tile-path.js'

/**
 * Reading perfect-subtree hashes back out of tiles. A tile stores only every 8th height, so the
 * hash of a subtree of height h is recomputed from the tile at level floor(h/8): its 2^(h mod 8)
 * hashes there are the subtree's own leaves. Everything a proof needs is such a hash, so one
 * batch of tile reads answers a whole proof.
 */

/** A hash tile to read: level (height 8·level), index in the level, and the width the tree has. */
export interface HashTile {
  readonly level: number
  readonly index: number
  readonly width: number
}

/**
 * Reads tiles as served: each answer `width` concatenated 32-byte hashes, in the order asked.
 * One call per proof, so a reader over HTTP or a database can fetch them together.
 */
export type TileReader = (tiles: HashTile[]) => Promise<Uint8Array[]>

/** A perfect subtree of 2^height leaves: leaves index·2^height … (index+1)·2^height − 1. */
export interface SubtreeCoordinates {
  readonly height: number
  readonly index: number
}

/** Where a subtree's hashes sit: the tile, and the `count` hashes from `offset` that are its leaves there. */
export interface SubtreeInTile {
  readonly level: number
  readonly index: number
  readonly offset: number
  readonly count: number
}

/**
 * The tile holding subtree (`height`, `index`)'s leaves at height 8·floor(height/8). Its 2^(h mod 8)
 * hashes never straddle two tiles: that count divides 256.
 */
export function subtreeInTile(height: number, index: number): SubtreeInTile {
  checkSubtree(height, index)
  const level = Math.floor(height / TILE_HEIGHT)
  const count = powerOfTwo(height % TILE_HEIGHT)
  const first = index * count
  return { level, index: Math.floor(first / TILE_WIDTH), offset: first % TILE_WIDTH, count }
}

/**
 * The hash of subtree (`height`, `index`) from `tile`, the bytes of the tile subtreeInTile names
 * (full or partial): its hashes at offset…offset+count−1 folded pairwise up to one.
 */
export function subtreeHashFromTile(tile: Uint8Array, height: number, index: number): Uint8Array {
  const place = subtreeInTile(height, index)
  if (!(tile instanceof Uint8Array) || tile.length % HASH_BYTES !== 0) throw new RangeError('a tile must be whole 32-byte hashes')
  if ((place.offset + place.count) * HASH_BYTES > tile.length) {
    throw new RangeError(`tile ${place.level}/${place.index} of ${tile.length / HASH_BYTES} hashes does not reach subtree (${height}, ${index})`)
  }
  let row: Uint8Array[] = []
  for (let i = 0; i < place.count; i++) {
    const start = (place.offset + i) * HASH_BYTES
    row.push(tile.subarray(start, start + HASH_BYTES))
  }
  while (row.length > 1) {
    const up: Uint8Array[] = []
    for (let i = 0; i < row.length; i += 2) up.push(interiorHash(row[i] as Uint8Array, row[i + 1] as Uint8Array))
    row = up
  }
  return Uint8Array.from(row[0] as Uint8Array)
}

/**
 * The hashes of `subtrees` in the tree of `size` leaves, in the order given, from one call to
 * `reader` asking each tile once: full where the tree has filled it, otherwise the partial tile
 * exactly as wide as `size` makes it (the only partial tile a checkpoint of `size` promises).
 * Throws a RangeError for a subtree not wholly inside the tree, and an Error when the reader
 * answers with the wrong number of tiles or a tile of the wrong length.
 */
export async function readSubtreeHashes(size: number, subtrees: readonly SubtreeCoordinates[], reader: TileReader): Promise<Uint8Array[]> {
  if (!isCount(size)) throw new RangeError(`tree size ${size} is not a non-negative safe integer`)
  if (subtrees.length === 0) return []
  const tiles: HashTile[] = []
  const tileOf = new Map<string, number>()
  const places = subtrees.map(({ height, index }) => {
    checkSubtree(height, index)
    // (index + 1)·2^height may round above 2^53, but then it is above any safe size too.
    if ((index + 1) * powerOfTwo(height) > size) throw new RangeError(`subtree (${height}, ${index}) is not inside a tree of ${size} leaves`)
    const place = subtreeInTile(height, index)
    const key = `${place.level}/${place.index}`
    let slot = tileOf.get(key)
    if (slot === undefined) {
      slot = tiles.length
      tileOf.set(key, slot)
      tiles.push({ level: place.level, index: place.index, width: tileWidthAt(size, place.level, place.index) })
    }
    return slot
  })
  const answers = await reader(tiles)
  if (!Array.isArray(answers) || answers.length !== tiles.length) {
    throw new Error(`the tile reader answered ${Array.isArray(answers) ? answers.length : 'no'} tiles for ${tiles.length} asked`)
  }
  tiles.forEach((tile, i) => {
    const bytes = answers[i]
    if (!(bytes instanceof Uint8Array) || bytes.length !== tile.width * HASH_BYTES) {
      throw new Error(`tile ${tile.level}/${tile.index} should be ${tile.width} hashes (${tile.width * HASH_BYTES} bytes), not ${bytes instanceof Uint8Array ? bytes.length : 'missing'}`)
    }
  })
  return subtrees.map(({ height, index }, i) => subtreeHashFromTile(answers[places[i] as number] as Uint8Array, height, index))
}

function checkSubtree(height: number, index: number): void {
  // Heights past 52 cannot fit in a safe-integer tree.
  if (!isCount(height) || height > 52) throw new RangeError(`subtree height ${height} is not 0…52`)
  if (!isCount(index)) throw new RangeError(`subtree index ${index} is not a non-negative safe integer`)
}
