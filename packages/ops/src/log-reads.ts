import { parseTilePath, servedCheckpoint, TILE_WIDTH, treeTilesRead, type TlogPolicy } from '@hookledger/ledger'
import type { Db } from '@hookledger/store'

/**
 * The log's public face (C2SP tlog-tiles): the newest checkpoint and the tiles. They reveal
 * hashes only (a tile of entries holds rows' commitments, never a row), so they need no token.
 */

/**
 * The checkpoint the log serves, with the witnesses' cosignatures: the newest that meets the
 * policy's quorum (the newest without a policy), or null before the first seal.
 */
export async function logCheckpointRead(db: Db, policy: TlogPolicy | null = null): Promise<string | null> {
  return (await servedCheckpoint(db, policy))?.note ?? null
}

/** A tile's bytes, or why there are none. */
export type LogTileAnswer =
  | { readonly ok: true; readonly bytes: Uint8Array; /** Full tiles never change. */ readonly full: boolean }
  | { readonly ok: false; readonly reason: 'bad_path' | 'not_found' }

/**
 * The tile at `path` (`tile/<L>/<N>[.p/<W>]` or `tile/entries/<N>[.p/<W>]`): hashes, or for
 * entries the bundle — each commitment as a big-endian uint16 length (32) and its bytes. A
 * partial tile is served only as wide as it was asked for; one the tree has not reached is 404.
 */
export async function logTileRead(db: Db, path: string): Promise<LogTileAnswer> {
  const tile = parseTilePath(path)
  if (tile === null) return { ok: false, reason: 'bad_path' }
  const width = tile.width
  const [hashes] = await treeTilesRead(db, [{ level: tile.level, index: tile.index, width }])
  if (!hashes) return { ok: false, reason: 'not_found' }
  const full = width === TILE_WIDTH
  if (tile.level !== 'entries') return { ok: true, bytes: hashes, full }
  const bundle = new Uint8Array(width * 34)
  for (let i = 0; i < width; i++) {
    bundle[i * 34] = 0
    bundle[i * 34 + 1] = 32
    bundle.set(hashes.subarray(i * 32, i * 32 + 32), i * 34 + 2)
  }
  return { ok: true, bytes: bundle, full }
}
export type { TlogPolicy } from '@hookledger/ledger'
