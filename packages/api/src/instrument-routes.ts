import { Hono, type Context } from 'hono'
import type { Db } from '@hookledger/store'
import { apiTokenVerify } from '@hookledger/store'
import { problem } from './problem.js'

/** The operator's instruments, given by the composition root (absent: the routes are not mounted). */
export interface ApiInstruments {
  /** Prometheus text exposition, for `GET /metrics` (operator token). */
  readonly metrics?: () => Promise<{ contentType: string; body: string }>
  /** `GET /readyz`: 200 when every check passes, else 503 naming the failing ones. */
  readonly readiness?: () => Promise<{ ok: boolean; checks: Record<string, { ok: boolean; detail?: string }> }>
  /** Called once per answer with its route pattern and status (`hookledger_http_requests_total`). */
  readonly requested?: (route: string, status: number) => void
}

/** The bearer token's principal, or null (no token, an unknown or revoked one). */
export async function bearerPrincipal(db: Db, c: Context) {
  const match = /^Bearer ([A-Za-z0-9_\-.~+/=]{1,200})$/i.exec(c.req.header('authorization') ?? '')
  return match ? apiTokenVerify(db, match[1]!) : null
}

export const unauthorized = (c: Context) =>
  problem(c, 401, 'unauthorized', 'a valid bearer token is required', undefined, { 'www-authenticate': 'Bearer' })

/**
 * `/healthz` (liveness: the process answers), `/readyz` (readiness: it can do its job now) and
 * `/metrics` (operator token). Mounted by the API, and served alone by a worker-only process on
 * `HOOKLEDGER_METRICS_PORT`, whose counters only it holds.
 */
export function createInstrumentRoutes(options: { db: Db; instruments?: ApiInstruments | undefined }): { app: Hono; paths: string[] } {
  const app = new Hono()
  const paths = ['/healthz']
  app.get('/healthz', (c) => c.json({ ok: true }))
  const { metrics, readiness } = options.instruments ?? {}
  if (readiness) {
    app.get('/readyz', async (c) => {
      const r = await readiness()
      return c.json(r, r.ok ? 200 : 503, r.ok ? {} : { 'retry-after': '5' })
    })
    paths.push('/readyz')
  }
  if (metrics) {
    app.get('/metrics', async (c) => {
      const principal = await bearerPrincipal(options.db, c)
      if (!principal) return unauthorized(c)
      if (!principal.scopes.includes('operator')) return problem(c, 403, 'forbidden', 'metrics need the "operator" scope')
      const { contentType, body } = await metrics()
      return c.body(body, 200, { 'content-type': contentType })
    })
    paths.push('/metrics')
  }
  return { app, paths }
}
