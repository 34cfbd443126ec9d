import { Hono } from 'hono'
import { logCheckpointRead, logTileRead } from '@hookledger/ops'
import type { Db } from '@hookledger/store'
import type { TlogPolicy } from '@hookledger/ops'
import { problem } from './problem.js'

/**
 * The transparency log over HTTP, as C2SP tlog-tiles serves it: `GET /log/checkpoint` (the
 * newest signed checkpoint, text/plain, cached a few seconds) and `GET /log/tile/…` (hash tiles
 * and entry bundles; full ones immutable). Public: they reveal hashes only. The prefix a
 * verifier is given is `<public URL>/log`.
 */
export function createLogRoutes(db: Db, policy: TlogPolicy | null = null): { app: Hono; paths: string[] } {
  const app = new Hono()
  app.get('/log/checkpoint', async (c) => {
    const note = await logCheckpointRead(db, policy)
    if (note === null) return problem(c, 404, 'not_found', 'the log has no checkpoint yet: nothing has been sealed')
    return c.body(note, 200, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'public, max-age=2' })
  })
  app.get('/log/tile/*', async (c) => {
    const answer = await logTileRead(db, c.req.path.slice('/log/'.length))
    if (!answer.ok) {
      return answer.reason === 'bad_path'
        ? problem(c, 404, 'not_found', `not a tile path: ${c.req.path} (tile/<L>/<N>[.p/<W>] or tile/entries/<N>[.p/<W>])`)
        : problem(c, 404, 'not_found', 'the tree has not reached this tile')
    }
    return c.body(new Uint8Array(answer.bytes), 200, {
      'content-type': 'application/octet-stream',
      'cache-control': answer.full ? 'public, max-age=31536000, immutable' : 'public, max-age=3600',
    })
  })
  return { app, paths: ['/log/checkpoint', '/log/tile/*'] }
}
