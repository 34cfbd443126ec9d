import { Hono, type Context } from 'hono'
import { bodyLimit } from 'hono/body-limit'
import type { z } from 'zod'
import { silentLogger } from '@hookledger/core'
import { OpError, OPERATIONS, type OpDeps, type Operation, type Principal } from '@hookledger/ops'
import { apiTokenVerify } from '@hookledger/store'
import { buildOpenApi } from './openapi.js'
import { problem } from './problem.js'

/** Whole request bodies above this are refused with 413 before parsing. */
export const REQUEST_BODY_MAX_BYTES = 64 * 1024

export interface ApiOptions {
  readonly deps: OpDeps
  readonly operations?: readonly Operation[]
}

type Env = { Variables: { principal: Principal } }

/** `:id` path → a RegExp for the 405 check. */
const pathPattern = (path: string) => new RegExp('^' + path.replace(/:[a-z_]+/g, '[^/]+') + '/?$')

function zodProblem(c: Context, error: z.ZodError): Response {
  const issue = error.issues[0]!
  const field = issue.path.map(String).join('.') || undefined
  const detail = field ? `${field}: ${issue.message}` : issue.message
  return problem(c, 400, 'invalid_input', detail, field)
}

/**
 * The HTTP adapter: one route per declared operation, bearer-token auth with the operation's
 * scope, zod validation of path + query/body, and one error handler that answers
 * `application/problem+json` for everything — a 500 only for a real fault, without a stack.
 * It never listens by itself (the server does).
 */
export function createApi(options: ApiOptions): Hono<Env> {
  const { deps } = options
  const log = deps.logger ?? silentLogger
  const operations = options.operations ?? OPERATIONS
  const app = new Hono<Env>()

  app.get('/healthz', (c) => c.json({ ok: true }))
  app.get('/api/openapi.json', (c) => c.json(buildOpenApi(operations)))

  for (const op of operations) {
    const handlers = [
      bodyLimit({
        maxSize: REQUEST_BODY_MAX_BYTES,
        onError: (c) => problem(c, 413, 'payload_too_large', `request body exceeds ${REQUEST_BODY_MAX_BYTES} bytes`),
      }),
      async function operation(c: Context<Env>) {
        const header = c.req.header('authorization') ?? ''
        const match = /^Bearer ([A-Za-z0-9_\-.~+/=]{1,200})$/.exec(header)
        const principal = match ? await apiTokenVerify(deps.db, match[1]!) : null
        if (!principal) {
          return problem(c, 401, 'unauthorized', 'a valid bearer token is required', undefined, {
            'www-authenticate': 'Bearer',
          })
        }
        if (!principal.scopes.includes(op.scope)) {
          return problem(c, 403, 'forbidden', `this operation needs the "${op.scope}" scope`)
        }
        let raw: Record<string, unknown> = {}
        if (op.http.method === 'POST' || op.http.method === 'PATCH') {
          const text = await c.req.text()
          if (text.trim() !== '') {
            const type = c.req.header('content-type') ?? ''
            if (!/^application\/(.+\+)?json\b/i.test(type)) {
              return problem(c, 415, 'unsupported_media_type', 'send the body as application/json')
            }
            let parsed: unknown
            try {
              parsed = JSON.parse(text)
            } catch {
              return problem(c, 400, 'invalid_json', 'the body is not valid JSON')
            }
            if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
              return problem(c, 400, 'invalid_input', 'the body must be a JSON object')
            }
            raw = parsed as Record<string, unknown>
          }
        } else {
          raw = { ...c.req.query() }
        }
        const input = op.input.safeParse({ ...raw, ...c.req.param() })
        if (!input.success) return zodProblem(c, input.error)
        const actor = principal.scopes.includes('operator') ? 'operator' : `owner:${principal.id}`
        const reply = await op.handler({ deps, principal, actor }, input.data)
        if (reply.status === 204) return c.body(null, 204)
        return c.json(reply.body as object, reply.status)
      },
    ] as const
    app.on(op.http.method, op.http.path, ...handlers)
  }

  app.notFound((c) => {
    const allowed = operations
      .filter((op) => pathPattern(op.http.path).test(c.req.path))
      .map((op) => op.http.method)
    if (allowed.length > 0) {
      return problem(c, 405, 'method_not_allowed', `use ${allowed.join(', ')}`, undefined, {
        allow: allowed.join(', '),
      })
    }
    return problem(c, 404, 'not_found', `no route for ${c.req.method} ${c.req.path}`)
  })

  app.onError((err, c) => {
    if (err instanceof OpError) return problem(c, err.status, err.code, err.message, err.field)
    // A malformed id can still reach PostgreSQL through a path we did not validate: treat
    // invalid text representations as bad input, never as a 500.
    const pgCode = (err as { code?: string }).code
    if (pgCode === '22P02' || pgCode === '22007' || pgCode === '22008' || pgCode === '22021') {
      return problem(c, 400, 'invalid_input', 'a value has the wrong format')
    }
    log.error({ err, path: c.req.path, method: c.req.method }, 'api:unhandled_error')
    return problem(c, 500, 'internal_error', 'something went wrong on our side')
  })

  return app
}
