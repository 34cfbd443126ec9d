import { Hono, type Context } from 'hono'
import { bodyLimit } from 'hono/body-limit'
import { HTTPException } from 'hono/http-exception'
import { matchedRoutes } from 'hono/route'
import { silentLogger, classifyDatabaseError, retryAfterSeconds } from '@hookledger/core'
import { createReplicaRouting, WRITE_LSN_HEADER } from './replica-routing.js'
import {
  OpError,
  OPERATIONS,
  hasJsonBody,
  inputForLog,
  invalidInput,
  parseOpInput,
  type OpDeps,
  type Operation,
} from '@hookledger/ops'
import { bearerPrincipal, createInstrumentRoutes, unauthorized, type ApiInstruments } from './instrument-routes.js'
import { createLogRoutes } from './log-routes.js'
import { createWellKnownRoutes } from './well-known-routes.js'
import { buildOpenApi } from './openapi.js'
import { PROBLEM_STATUS } from './problem-status.js'
import { problem } from './problem.js'

/** Whole request bodies above this are refused with 413 before parsing. */
export const REQUEST_BODY_MAX_BYTES = 64 * 1024

export interface ApiOptions {
  readonly deps: OpDeps
  readonly operations?: readonly Operation[]
  readonly instruments?: ApiInstruments
  /** Serve the transparency log's checkpoint and tiles at `/log/…` (default true; HOOKLEDGER_LOG_TILES=off). */
  readonly logTiles?: boolean
}

/** `op` names the operation a request reached, for the request log line. */
type Env = { Variables: { op: string } }

/** `:id` path → a RegExp for the 405 check. */
const pathPattern = (path: string) => new RegExp('^' + path.replace(/:[a-z_]+/g, '[^/]+') + '$')

/** Per segment: 0 for a literal, 1 for a `:param`. */
const segmentKinds = (path: string) => path.split('/').map((s) => (s.startsWith(':') ? 1 : 0))

/**
 * Literal segments before `:param` at the same place (`/webhooks/event_types` before
 * `/webhooks/:id`): the router tries routes in registration order. Stable otherwise.
 */
export function routeOrder(a: Operation, b: Operation): number {
  const ka = segmentKinds(a.http.path)
  const kb = segmentKinds(b.http.path)
  for (let i = 0; i < Math.min(ka.length, kb.length); i++) {
    if (ka[i] !== kb[i]) return ka[i]! - kb[i]!
  }
  return 0
}

// The database refusing a value's format is bad input, never a 500: invalid text
// representation, datetime format/overflow, untranslatable character, bad escape.
const PG_BAD_INPUT = new Set(['22P02', '22007', '22008', '22021', '22P05', '22025', '22003'])

/** Reads the request's input: JSON body (POST/PUT/PATCH) or query string, then path params. */
async function rawInput(c: Context<Env>, op: Operation): Promise<Record<string, unknown>> {
  let raw: Record<string, unknown> = {}
  const queries = c.req.queries()
  if (hasJsonBody(op.http.method)) {
    const first = Object.keys(queries)[0]
    if (first !== undefined)
      throw invalidInput(first, 'send input in the JSON body, not the query string')
    const text = await c.req.text()
    if (text.trim() !== '') {
      const type = c.req.header('content-type') ?? ''
      if (!/^application\/(.+\+)?json\b/i.test(type)) {
        throw new OpError('unsupported_media_type', 'send the body as application/json')
      }
      let parsed: unknown
      try {
        parsed = JSON.parse(text)
      } catch {
        throw new OpError('invalid_json', 'the body is not valid JSON')
      }
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
        throw new OpError('invalid_input', 'the body must be a JSON object')
      }
      raw = parsed as Record<string, unknown>
    }
  } else {
    for (const [key, values] of Object.entries(queries)) {
      if (values.length > 1) throw invalidInput(key, 'is given more than once')
      raw[key] = values[0]
    }
  }
  const params = c.req.param() as Record<string, string>
  for (const name of Object.keys(params)) {
    // The path names the object; a second, different id in the body would be ambiguous.
    if (Object.hasOwn(raw, name)) throw invalidInput(name, 'is taken from the path')
  }
  return { ...raw, ...params }
}

/**
 * The HTTP adapter: one route per declared operation, bearer-token auth with the operation's
 * scope, the ops' own input validation of path + query/body, and one error handler that answers
 * `application/problem+json` for everything — a 500 only for a real fault, without a stack.
 * Each request is logged at debug (operation, status, validated input; never an answer body,
 * so never a secret). It never listens by itself (the server does).
 */
export function createApi(options: ApiOptions): Hono<Env> {
  const { deps } = options
  const log = deps.logger ?? silentLogger
  const operations = [...(options.operations ?? OPERATIONS)].sort(routeOrder)
  const routes: { method: string; pattern: RegExp }[] = []
  const app = new Hono<Env>()

  app.use('*', async (c, next) => {
    const started = performance.now()
    await next()
    // The matched pattern, never the path itself (ids would make the label unbounded).
    const last = matchedRoutes(c).filter((r) => r.method !== 'ALL').at(-1)
    const route = last ? last.path : 'unmatched'
    options.instruments?.requested?.(route, c.res.status)
    log.debug(
      {
        method: c.req.method,
        path: c.req.path,
        op: c.get('op'),
        status: c.res.status,
        ms: Math.round(performance.now() - started),
      },
      'api:request',
    )
  })

  const principalOf = (c: Context<Env>) => bearerPrincipal(deps.db, c)
  // HOOKLEDGER_READ_DATABASE_URL: history reads go to the replica unless the caller's own write is not there yet.
  const replicaRouting = createReplicaRouting(deps)

  const instrumentRoutes = createInstrumentRoutes({ db: deps.db, instruments: options.instruments })
  app.route('/', instrumentRoutes.app)
  for (const path of instrumentRoutes.paths) routes.push({ method: 'GET', pattern: pathPattern(path) })
  if (options.logTiles !== false) {
    const logRoutes = createLogRoutes(deps.db, deps.logPolicy ?? null)
    app.route('/', logRoutes.app)
    for (const path of logRoutes.paths) routes.push({ method: 'GET', pattern: pathPattern(path.replace('*', '.*')) })
  }
  const wellKnown = createWellKnownRoutes(deps.db, deps.clock)
  app.route('/', wellKnown.app)
  for (const path of wellKnown.paths) routes.push({ method: 'GET', pattern: pathPattern(path) })
  // The operations are fixed once the app is built: the document is built on first request, then kept.
  let openApi: ReturnType<typeof buildOpenApi> | undefined
  app.get('/api/openapi.json', (c) => c.json((openApi ??= buildOpenApi(operations))))
  routes.push({ method: 'GET', pattern: pathPattern('/api/openapi.json') })

  for (const op of operations) {
    routes.push({ method: op.http.method, pattern: pathPattern(op.http.path) })
    const limit = bodyLimit({
      maxSize: REQUEST_BODY_MAX_BYTES,
      onError: (c) =>
        problem(
          c,
          413,
          'payload_too_large',
          `request body exceeds ${REQUEST_BODY_MAX_BYTES} bytes`,
        ),
    })
    app.on(op.http.method, op.http.path, limit, async (c: Context<Env>) => {
      c.set('op', op.name)
      const principal = await principalOf(c)
      if (!principal) return unauthorized(c)
      if (!principal.scopes.includes(op.scope)) {
        return problem(c, 403, 'forbidden', `this operation needs the "${op.scope}" scope`)
      }
      const input = parseOpInput(op, await rawInput(c, op))
      // Secret header values never reach the line (inputForLog).
      log.debug({ op: op.name, input: inputForLog(input) }, 'api:input')
      const actor = principal.scopes.includes('operator') ? 'operator' : `owner:${principal.id}`
      const routed = await replicaRouting.depsFor(op, principal, c.req.header(WRITE_LSN_HEADER))
      const reply = await op.handler({ deps: routed.deps, principal, actor }, input)
      for (const [name, value] of Object.entries({ ...routed.headers, ...(await replicaRouting.afterWrite(op, principal)) })) c.header(name, value)
      if (reply.status === 204) return c.body(null, 204)
      if (reply.location !== undefined) c.header('location', reply.location)
      for (const [name, value] of Object.entries(reply.headers ?? {})) c.header(name, value)
      return c.json(reply.body as object, reply.status)
    })
  }

  app.notFound((c) => {
    const allowed = [
      ...new Set(routes.filter((r) => r.pattern.test(c.req.path)).map((r) => r.method)),
    ]
    if (allowed.length > 0 && !allowed.includes(c.req.method)) {
      return problem(c, 405, 'method_not_allowed', `use ${allowed.join(', ')}`, undefined, {
        allow: allowed.join(', '),
      })
    }
    return problem(c, 404, 'not_found', `no route for ${c.req.method} ${c.req.path}`)
  })

  app.onError((err, c) => {
    if (err instanceof OpError) {
      // A refusal that passes says until when, in seconds on the service's clock too.
      const retry: Record<string, string> = err.retryAt === undefined ? {} : { 'retry-after': String(retryAfterSeconds(err.retryAt.toISOString(), deps.clock.now())) }
      return problem(c, PROBLEM_STATUS[err.code], err.code, err.message, err.field, retry, err.pointer, err.retryAt?.toISOString())
    }
    if (err instanceof HTTPException && err.status < 500) {
      return problem(c, err.status, 'bad_request', err.message || 'the request cannot be read')
    }
    const pgCode = (err as { code?: unknown }).code
    if (typeof pgCode === 'string' && PG_BAD_INPUT.has(pgCode)) {
      return problem(c, 400, 'invalid_input', 'a value has the wrong format')
    }
    // The database out of reach is not our fault and not the caller's: 503, come back soon.
    if (classifyDatabaseError(err) === 'unavailable') {
      log.warn({ err: (err as Error).message, path: c.req.path }, 'api:database_unavailable')
      return problem(c, 503, 'database_unavailable', 'the database is not reachable right now; retry shortly', undefined, {
        'retry-after': '5',
      })
    }
    log.error({ err, path: c.req.path, method: c.req.method }, 'api:unhandled_error')
    return problem(c, 500, 'internal_error', 'something went wrong on our side')
  })

  return app
}
