import { Hono } from 'hono'
import { endpointPublishedKeys, uuidParam } from '@hookledger/ops'
import type { Clock } from '@hookledger/core'
import type { Db } from '@hookledger/store'
import { problem } from './problem.js'

/**
 * `GET /.well-known/hookledger/keys/:endpoint_id`: an endpoint's v1a public keys, current and
 * in grace (ops' `endpointPublishedKeys`). Public and cacheable — public keys are public by
 * design — so a receiver can fetch them itself and follow a rotation without anyone copying
 * keys. `If-None-Match` with the current ETag answers 304.
 */
export function createWellKnownRoutes(db: Db, clock: Clock): { app: Hono; paths: string[] } {
  const app = new Hono()
  const path = '/.well-known/hookledger/keys/:endpoint_id'
  app.get(path, async (c) => {
    const id = c.req.param('endpoint_id')
    if (!uuidParam.safeParse(id).success) return problem(c, 400, 'invalid_input', 'endpoint_id: must be a UUID', 'endpoint_id')
    const answer = await endpointPublishedKeys(db, id.toLowerCase(), clock.now())
    if (answer === null) return problem(c, 404, 'not_found', 'no endpoint with v1a keys has this id')
    const headers = { etag: answer.etag, 'cache-control': `public, max-age=${answer.maxAgeS}` }
    const known = c.req.header('if-none-match')
    if (known !== undefined && known.split(',').some((tag) => tag.trim().replace(/^W\//, '') === answer.etag)) {
      return c.body(null, 304, headers)
    }
    return c.json(answer.body, 200, headers)
  })
  return { app, paths: [path] }
}
