import { isCount, powerOfTwo } from './tree-hash.js'

/**
 * Where C2SP tlog-tiles serves each tile, and which tiles a tree of a given size has. A tile is
 * 256 consecutive hashes at one height of the tree (level L holds the hashes at height 8·L);
 * the rightmost tile of a level is usually partial, and a partial tile has a path of its own
 * (`.p/<W>`), so a path names exactly one immutable resource.
 */

/** Tree levels one tile spans: a tile's 256 hashes are the leaves of a subtree of height 8. */
export const TILE_HEIGHT = 8
/** Hashes in a full tile (2^TILE_HEIGHT). */
export const TILE_WIDTH = 256
/** The highest level a path may name (the spec's bound, far past any safe-integer tree). */
export const MAX_TILE_LEVEL = 63

/**
 * One tile: a hash level 0…63 or the entry bundles (`'entries'`), its index within the level,
 * and its width — 256 for a full tile, 1…255 for a partial one.
 */
export interface TileCoordinates {
  readonly level: number | 'entries'
  readonly index: number
  readonly width: number
}

/**
 * The tile's path below the log's prefix: `tile/<L>/<N>[.p/<W>]` or `tile/entries/<N>[.p/<W>]`,
 * `<N>` in 3-digit groups of which all but the last start with `x` (1234067 → `x001/x234/067`).
 * Throws a RangeError for coordinates no tile has.
 */
export function tilePath(tile: TileCoordinates): string {
  const { level, index, width } = tile
  if (level !== 'entries' && !(isCount(level) && level <= MAX_TILE_LEVEL)) {
    throw new RangeError(`tile level ${String(level)} is neither 0…${MAX_TILE_LEVEL} nor 'entries'`)
  }
  if (!isCount(index)) throw new RangeError(`tile index ${index} is not a non-negative safe integer`)
  if (!Number.isInteger(width) || width < 1 || width > TILE_WIDTH) throw new RangeError(`tile width ${width} is not 1…${TILE_WIDTH}`)
  const suffix = width === TILE_WIDTH ? '' : `.p/${width}`
  return `tile/${level}/${encodeIndex(index)}${suffix}`
}

/** `<N>`: the decimal digits, left-padded to a multiple of 3, grouped in threes, `x` before all but the last. */
function encodeIndex(index: number): string {
  let digits = String(index)
  while (digits.length % 3 !== 0) digits = '0' + digits
  const groups: string[] = []
  for (let i = 0; i < digits.length; i += 3) groups.push(digits.slice(i, i + 3))
  return groups.map((g, i) => (i < groups.length - 1 ? 'x' + g : g)).join('/')
}

// ASCII digits only ([0-9], not \d, kept explicit), every group exactly three, `x` lower-case.
const TILE_PATH = /^tile\/(entries|0|[1-9][0-9]?)\/((?:x[0-9]{3}\/)*)([0-9]{3})(?:\.p\/([1-9][0-9]{0,2}))?$/

/**
 * The tile a path names, or null unless the path is the canonical one `tilePath` writes: a level
 * past 63 or with a leading zero, an index group that is not 3 digits, a leading all-zero `x000`
 * group (1 written as `x000/001`), an index past 2^53 − 1, or a width of 0, 256 or more or with a
 * leading zero are all refused. The path is what follows the log's prefix (`tile/…`).
 */
export function parseTilePath(path: string): TileCoordinates | null {
  if (typeof path !== 'string') return null
  const match = TILE_PATH.exec(path)
  if (match === null) return null
  const [, levelText, prefixGroups, lastGroup, widthText] = match as unknown as [string, string, string, string, string | undefined]
  const level = levelText === 'entries' ? 'entries' : Number(levelText)
  if (level !== 'entries' && level > MAX_TILE_LEVEL) return null
  const groups = [...prefixGroups.split('/').filter((g) => g !== '').map((g) => g.slice(1)), lastGroup]
  // Canonical form has no leading all-zero group: index 1 is `001`, never `x000/001`.
  if (groups.length > 1 && groups[0] === '000') return null
  const index = Number(groups.join(''))
  if (!Number.isSafeInteger(index)) return null
  if (widthText === undefined) return { level, index, width: TILE_WIDTH }
  const width = Number(widthText)
  // `.p/256` would be a second name for the full tile.
  if (width >= TILE_WIDTH) return null
  return { level, index, width }
}

/** One level of a tree's tiles: its full tiles (indexes 0…fullTiles − 1), then a partial one if partialWidth > 0. */
export interface TileLevelCounts {
  readonly level: number
  readonly fullTiles: number
  /** Width of the partial tile at index `fullTiles`, 0 when the level ends on a full tile. */
  readonly partialWidth: number
}

/**
 * The hash tiles a tree of `size` leaves has, per level from 0 up to the last level with any:
 * level l holds floor(size / 256^l) hashes, so floor(size / 256^(l+1)) full tiles and a partial
 * one of (floor(size / 256^l) mod 256) hashes. The entry bundles follow level 0's counts.
 */
export function tilesForTreeSize(size: number): TileLevelCounts[] {
  if (!isCount(size)) throw new RangeError(`tree size ${size} is not a non-negative safe integer`)
  const levels: TileLevelCounts[] = []
  for (let level = 0; ; level++) {
    const hashes = hashesAtLevel(size, level)
    if (hashes === 0) return levels
    levels.push({ level, fullTiles: Math.floor(hashes / TILE_WIDTH), partialWidth: hashes % TILE_WIDTH })
  }
}

/**
 * The width tile (`level`, `index`) has in a tree of `size` leaves: 256 when full, 1…255 when
 * partial, 0 when the tree has no such tile yet. The width to ask for: a client may only fetch
 * the partial tile a verified size implies.
 */
export function tileWidthAt(size: number, level: number, index: number): number {
  if (!isCount(size)) throw new RangeError(`tree size ${size} is not a non-negative safe integer`)
  if (!isCount(level) || level > MAX_TILE_LEVEL) throw new RangeError(`tile level ${level} is not 0…${MAX_TILE_LEVEL}`)
  if (!isCount(index)) throw new RangeError(`tile index ${index} is not a non-negative safe integer`)
  const remaining = hashesAtLevel(size, level) - index * TILE_WIDTH
  return Math.max(0, Math.min(TILE_WIDTH, remaining))
}

/** floor(size / 256^level): the hashes at height 8·level, i.e. the complete 256^level-leaf subtrees. */
function hashesAtLevel(size: number, level: number): number {
  return Math.floor(size / powerOfTwo(TILE_HEIGHT * level))
}
