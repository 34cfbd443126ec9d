import { describe, expect, it } from 'vitest'
import { parseTilePath, TILE_HEIGHT, TILE_WIDTH, tilePath, tilesForTreeSize, tileWidthAt, type TileCoordinates } from './tile-path.js'

describe('tile geometry', () => {
  it('a tile spans 8 levels: 256 hashes', () => {
    expect(TILE_HEIGHT).toBe(8)
    expect(TILE_WIDTH).toBe(2 ** TILE_HEIGHT)
  })
})

// The spec's example (1234067 → x001/x234/067) and the group boundaries around it.
const PATHS: Array<[TileCoordinates, string]> = [
  [{ level: 0, index: 0, width: 256 }, 'tile/0/000'],
  [{ level: 0, index: 7, width: 256 }, 'tile/0/007'],
  [{ level: 0, index: 999, width: 256 }, 'tile/0/999'],
  [{ level: 0, index: 1000, width: 256 }, 'tile/0/x001/000'],
  [{ level: 1, index: 1234067, width: 256 }, 'tile/1/x001/x234/067'],
  [{ level: 'entries', index: 1234067, width: 256 }, 'tile/entries/x001/x234/067'],
  [{ level: 0, index: 1234067, width: 112 }, 'tile/0/x001/x234/067.p/112'],
  [{ level: 'entries', index: 273, width: 112 }, 'tile/entries/273.p/112'],
  [{ level: 1, index: 1, width: 17 }, 'tile/1/001.p/17'],
  [{ level: 2, index: 0, width: 1 }, 'tile/2/000.p/1'],
  [{ level: 63, index: 0, width: 255 }, 'tile/63/000.p/255'],
  [{ level: 0, index: 1_000_000, width: 256 }, 'tile/0/x001/x000/000'],
  // Past 2^32: 2^40 and the largest safe integer.
  [{ level: 0, index: 2 ** 40, width: 256 }, 'tile/0/x001/x099/x511/x627/776'],
  [{ level: 0, index: Number.MAX_SAFE_INTEGER, width: 9 }, 'tile/0/x009/x007/x199/x254/x740/991.p/9'],
]

describe('tilePath', () => {
  it.each(PATHS)('%j → %s', (tile, path) => {
    expect(tilePath(tile)).toBe(path)
  })

  it.each([
    [{ level: 0, index: 0, width: 0 }],
    [{ level: 0, index: 0, width: 257 }],
    [{ level: 0, index: 0, width: 1.5 }],
    [{ level: 0, index: -1, width: 256 }],
    [{ level: 0, index: 2.5, width: 256 }],
    [{ level: 0, index: 2 ** 53, width: 256 }],
    [{ level: 64, index: 0, width: 256 }],
    [{ level: -1, index: 0, width: 256 }],
    [{ level: 'leaves' as unknown as 'entries', index: 0, width: 256 }],
  ])('refuses %j', (tile) => {
    expect(() => tilePath(tile)).toThrow(RangeError)
  })
})

describe('parseTilePath', () => {
  it.each(PATHS)('%j ← %s', (tile, path) => {
    expect(parseTilePath(path)).toEqual(tile)
  })

  it('round-trips every index around the 3-digit group boundaries', () => {
    for (const index of [0, 1, 9, 10, 99, 100, 998, 999, 1000, 1001, 999_999, 1_000_000, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 1]) {
      for (const width of [1, 255, 256]) {
        const tile: TileCoordinates = { level: 5, index, width }
        expect(parseTilePath(tilePath(tile))).toEqual(tile)
      }
    }
  })

  it.each([
    ['tile/00/000', 'level with a leading zero'],
    ['tile/01/000', 'level with a leading zero'],
    ['tile/64/000', 'level past 63'],
    ['tile/100/000', 'level past 63'],
    ['tile/-1/000', 'negative level'],
    ['tile/1.0/000', 'non-integer level'],
    ['tile/x/000', 'no level'],
    ['tile/Entries/000', 'entries spelled otherwise'],
    ['tile/0/0', 'index group of one digit'],
    ['tile/0/00', 'index group of two digits'],
    ['tile/0/0000', 'index group of four digits'],
    ['tile/0/x000/001', 'a leading zero group: 1 is 001'],
    ['tile/0/x000/x001/000', 'a leading zero group: 1000 is x001/000'],
    ['tile/0/x001', 'the last group carrying x'],
    ['tile/0/001/000', 'an inner group without x'],
    ['tile/0/x001/234/067', 'an inner group without x'],
    ['tile/0/X001/000', 'upper-case X'],
    ['tile/0/x01/000', 'a short inner group'],
    ['tile/0/٠٠١', 'non-ASCII digits'],
    ['tile/0/x009/x007/x199/x254/x740/992', 'index 2^53, past the safe integers'],
    ['tile/0/x999/x999/x999/x999/x999/x999/999', 'index far past the safe integers'],
    ['tile/0/001.p/0', 'width 0'],
    ['tile/0/001.p/256', 'width 256: a full tile has no .p'],
    ['tile/0/001.p/300', 'width past 256'],
    ['tile/0/001.p/05', 'width with a leading zero'],
    ['tile/0/001.p/', 'no width'],
    ['tile/0/001.p', 'no width'],
    ['tile/0/001.p/1/', 'trailing slash'],
    ['tile/0/001/', 'trailing slash'],
    ['tile/0/001.p/+1', 'signed width'],
    ['tile/0/x001.p/3/000', '.p on an inner group'],
    ['/tile/0/000', 'leading slash'],
    ['tile//0/000', 'empty element'],
    ['tile/0//000', 'empty element'],
    ['tiles/0/000', 'not tile/'],
    ['tile/0/000?x=1', 'a query'],
    ['tile/0/000 ', 'trailing space'],
    ['tile/0/ 000', 'inner space'],
    ['tile/0', 'no index'],
    ['tile/entries', 'no index'],
    ['', 'empty'],
  ])('refuses %s (%s)', (path) => {
    expect(parseTilePath(path)).toBeNull()
  })

  it('refuses what is not a string', () => {
    expect(parseTilePath(undefined as unknown as string)).toBeNull()
    expect(parseTilePath(12 as unknown as string)).toBeNull()
  })
})

describe('tilesForTreeSize', () => {
  it.each([
    [0, []],
    [1, [{ level: 0, fullTiles: 0, partialWidth: 1 }]],
    [255, [{ level: 0, fullTiles: 0, partialWidth: 255 }]],
    // The spec: "a tree of size 256 will be represented by a full level 0 tile and a partial level 1 tile of width 1".
    [256, [{ level: 0, fullTiles: 1, partialWidth: 0 }, { level: 1, fullTiles: 0, partialWidth: 1 }]],
    [257, [{ level: 0, fullTiles: 1, partialWidth: 1 }, { level: 1, fullTiles: 0, partialWidth: 1 }]],
    [65_535, [{ level: 0, fullTiles: 255, partialWidth: 255 }, { level: 1, fullTiles: 0, partialWidth: 255 }]],
    [
      65_536,
      [
        { level: 0, fullTiles: 256, partialWidth: 0 },
        { level: 1, fullTiles: 1, partialWidth: 0 },
        { level: 2, fullTiles: 0, partialWidth: 1 },
      ],
    ],
    // The spec: 273 full level 0 tiles, a partial one of width 112, one full level 1 tile, a
    // partial one of width 17, and a partial level 2 tile of width 1.
    [
      70_000,
      [
        { level: 0, fullTiles: 273, partialWidth: 112 },
        { level: 1, fullTiles: 1, partialWidth: 17 },
        { level: 2, fullTiles: 0, partialWidth: 1 },
      ],
    ],
    [
      2 ** 40 + 5,
      [
        { level: 0, fullTiles: 2 ** 32, partialWidth: 5 },
        { level: 1, fullTiles: 2 ** 24, partialWidth: 0 },
        { level: 2, fullTiles: 2 ** 16, partialWidth: 0 },
        { level: 3, fullTiles: 2 ** 8, partialWidth: 0 },
        { level: 4, fullTiles: 1, partialWidth: 0 },
        { level: 5, fullTiles: 0, partialWidth: 1 },
      ],
    ],
  ])('a tree of %i leaves', (size, levels) => {
    expect(tilesForTreeSize(size)).toEqual(levels)
  })

  it('the largest safe tree: 7 levels, each count from the size digits in base 256', () => {
    const levels = tilesForTreeSize(Number.MAX_SAFE_INTEGER) // 2^53 − 1: base-256 digits 31, 255 × 6
    expect(levels.map((l) => l.partialWidth)).toEqual([255, 255, 255, 255, 255, 255, 31])
    expect(levels[6]).toEqual({ level: 6, fullTiles: 0, partialWidth: 31 })
    expect(levels[0]?.fullTiles).toBe(Math.floor(Number.MAX_SAFE_INTEGER / 256))
  })

  it.each([-1, 1.5, 2 ** 53, Number.NaN])('refuses size %s', (size) => {
    expect(() => tilesForTreeSize(size)).toThrow(RangeError)
  })
})

describe('tileWidthAt', () => {
  it.each([
    [70_000, 0, 0, 256],
    [70_000, 0, 272, 256],
    [70_000, 0, 273, 112],
    [70_000, 0, 274, 0],
    [70_000, 1, 0, 256],
    [70_000, 1, 1, 17],
    [70_000, 1, 2, 0],
    [70_000, 2, 0, 1],
    [70_000, 3, 0, 0],
    [0, 0, 0, 0],
    [256, 0, 1, 0],
    [256, 1, 0, 1],
    [2 ** 40 + 5, 0, 2 ** 32, 5],
    [2 ** 40 + 5, 0, 2 ** 32 - 1, 256],
    [2 ** 40 + 5, 5, 0, 1],
  ])('size %i, level %i, tile %i: width %i', (size, level, index, width) => {
    expect(tileWidthAt(size, level, index)).toBe(width)
  })

  it('agrees with tilesForTreeSize for every size up to 600 and every tile', () => {
    for (let size = 0; size <= 600; size++) {
      for (const { level, fullTiles, partialWidth } of tilesForTreeSize(size)) {
        for (let index = 0; index < fullTiles; index++) expect(tileWidthAt(size, level, index)).toBe(256)
        expect(tileWidthAt(size, level, fullTiles)).toBe(partialWidth)
        expect(tileWidthAt(size, level, fullTiles + 1)).toBe(0)
      }
    }
  })
})
