/**
 * What a seal adds to the stored tiles: the tree only grows at its right edge, so each tile it
 * touches gains hashes at its end. Level -1 is the entry bundle level (the commitments
 * themselves); level L ≥ 0 holds the hashes at height 8·L (tlog-tiles).
 */
import { TILE_WIDTH } from './tile-path.js'
import { HASH_BYTES } from './tree-hash.js'

/** The level that stores entries (commitments), beside the hash levels 0…63. */
export const ENTRY_LEVEL = -1


/** Hashes appended to one tile: its first new hash sits at `offset` (the width it had). */
export interface TileAppend {
  readonly level: number
  readonly index: number
  readonly offset: number
  /** The new hashes, concatenated. */
  readonly hashes: Uint8Array
}

/** A perfect subtree's hash at `height` (a multiple of 8: what a tile stores) and `index`. */
export interface TileStoredHash {
  readonly height: number
  readonly index: number
  readonly hash: Uint8Array
}

/**
 * The tile appends for entries `firstIndex…` (their commitments) and the stored hashes an
 * append completed, grouped per tile in index order. Stored hashes at heights that are not a
 * multiple of 8 are not tiles' and are refused.
 */
export function tileAppends(firstIndex: number, commitments: readonly Uint8Array[], stored: readonly TileStoredHash[]): TileAppend[] {
  const perLevel = new Map<number, { index: number; hash: Uint8Array }[]>()
  const entries = commitments.map((hash, i) => ({ index: firstIndex + i, hash }))
  if (entries.length > 0) perLevel.set(ENTRY_LEVEL, entries)
  for (const s of stored) {
    if (s.height % 8 !== 0) throw new RangeError(`height ${s.height} is not a tile level`)
    const level = s.height / 8
    let list = perLevel.get(level)
    if (!list) perLevel.set(level, (list = []))
    list.push({ index: s.index, hash: s.hash })
  }
  const out: TileAppend[] = []
  for (const level of [...perLevel.keys()].sort((a, b) => a - b)) {
    const list = perLevel.get(level)!.sort((a, b) => a.index - b.index)
    let start = 0
    while (start < list.length) {
      const tile = Math.floor(list[start]!.index / TILE_WIDTH)
      let end = start
      while (end < list.length && Math.floor(list[end]!.index / TILE_WIDTH) === tile) {
        if (end > start && list[end]!.index !== list[end - 1]!.index + 1) throw new RangeError(`tile (${level}, ${tile}) would get a gap`)
        end++
      }
      const hashes = new Uint8Array((end - start) * HASH_BYTES)
      for (let i = start; i < end; i++) hashes.set(list[i]!.hash, (i - start) * HASH_BYTES)
      out.push({ level, index: tile, offset: list[start]!.index % TILE_WIDTH, hashes })
      start = end
    }
  }
  return out
}
