// The real service for the admin UI's browser tests: API + UI on a free loopback port, a
// dispatcher, a loopback receiver, two tokens and the browser. Shared by the admin-ui*.e2e
// spec files, so each stays a readable size.
import { serve, type ServerType } from '@hono/node-server'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import { Webhook } from 'standardwebhooks'
import { expect } from 'vitest'
import { createApi } from '@hookledger/api'
import { encodeMasterKey, generateMasterKey, systemClock } from '@hookledger/core'
import { createLogger, createOpDeps, loadConfig } from '@hookledger/server'
import { apiTokenCreate, createPgNotifier, type Notifier } from '@hookledger/store'
import {
  TestReceiver,
  resolveChromium,
  testDatabase,
  type ReceivedRequest,
  type ScriptedReply,
  type TestDatabase,
} from '@hookledger/testkit'
import { createUiRoutes } from '@hookledger/ui'
import { Dispatcher, createHttpTransport } from '@hookledger/worker'

/** The real service in this process: API + UI on a free loopback port, a dispatcher, a receiver. */
export interface Stack {
  readonly url: string
  readonly adminToken: string
  readonly publishOnlyToken: string
  readonly receiver: TestReceiver
  /** Event ids whose signature verified with the secret the UI showed. */
  readonly verified: string[]
  /** The secret the receiver checks, per request path (set from what the UI shows). */
  readonly verifiers: Map<string, Webhook>
  /** Paths answered by a script instead of the signature check (429s, 500s, …). */
  readonly scripted: Map<string, (req: ReceivedRequest, index: number) => ScriptedReply>
  stop(): Promise<void>
}

/** The API and the UI on a free loopback port, with the row links pointing at it. */
async function listen(deps: ReturnType<typeof createOpDeps>): Promise<{ url: string; server: ServerType }> {
  const app = createApi({ deps })
  app.route('/', createUiRoutes())
  let server: ServerType | null = null
  const port = await new Promise<number>((resolve) => {
    server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => resolve(info.port))
  })
  const url = `http://127.0.0.1:${port}`
  // As the service does: the row links point at the address actually listened on.
  ;(deps as { publicBaseUrl: string }).publicBaseUrl = url
  return { url, server: server as unknown as ServerType }
}

/**
 * Answers a scripted path from its script; any other path 204 only to a request signed with the
 * secret the UI showed, else 400 (discarded).
 */
function startReceiver(stack: Stack): Promise<TestReceiver> {
  return new TestReceiver((req, index) => {
    const script = stack.scripted.get(req.path)
    if (script) return script(req, index)
    try {
      const verifier = stack.verifiers.get(req.path)
      if (!verifier) return { status: 400, headers: { 'content-type': 'text/plain' }, body: 'no secret for this path' }
      verifier.verify(req.body, req.headers as Record<string, string>)
      stack.verified.push(String(req.headers['webhook-id']))
      return { status: 204 }
    } catch {
      return { status: 400 }
    }
  }).start()
}

export async function startStack(): Promise<Stack> {
  const database: TestDatabase = await testDatabase({ poolSize: 6 })
  const config = loadConfig({
    HOOKLEDGER_MASTER_KEY: encodeMasterKey(generateMasterKey()),
    HOOKLEDGER_EGRESS_ALLOW: '127.0.0.0/8',
    LOG_LEVEL: 'silent',
  })
  const log = createLogger(config)
  const deps = createOpDeps(config, database.db, log, systemClock)
  const { url, server } = await listen(deps)
  const notifier: Notifier = createPgNotifier(database.url)
  const transport = createHttpTransport({ policy: deps.egressPolicy })
  const dispatcher = new Dispatcher({
    db: database.db,
    clock: deps.clock,
    transport,
    secretBox: deps.secretBox,
    catalog: deps.catalog,
    embedAdmits: async () => false,
    workerId: 'admin-ui-e2e',
    logger: log,
    notifier,
    concurrency: 4,
    pollIntervalMs: 200,
  })
  await dispatcher.start()
  const now = new Date()
  const admin = await apiTokenCreate(database.db, { owner_id: 'acme', scopes: ['admin', 'publish'], now })
  const publishOnly = await apiTokenCreate(database.db, { owner_id: 'acme', scopes: ['publish'], now })
  const stack: Stack = {
    url,
    adminToken: admin.token,
    publishOnlyToken: publishOnly.token,
    receiver: null as unknown as TestReceiver,
    verified: [],
    verifiers: new Map(),
    scripted: new Map(),
    async stop() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()))
      ;(server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.()
      await closed
      await dispatcher.stop()
      await transport.close()
      await notifier.close()
      await stack.receiver.close()
      await database.close()
    },
  }
  ;(stack as { receiver: TestReceiver }).receiver = await startReceiver(stack)
  return stack
}

/** CHROMIUM_PATH, else an installed Chromium, else the one inside @sparticuz/chromium. */
export async function launchBrowser(): Promise<Browser> {
  const { executablePath, args, headless, env } = await resolveChromium()
  return chromium.launch({ executablePath, args, headless, env })
}

/** A tab that records script errors (a refused fetch's "Failed to load resource" is expected). */
export async function openTab(context: BrowserContext): Promise<{ page: Page; errors: string[] }> {
  const page = await context.newPage()
  page.setDefaultTimeout(10_000)
  const errors: string[] = []
  page.on('pageerror', (err) => errors.push(err.message))
  page.on('console', (m) => {
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) errors.push(m.text())
  })
  return { page, errors }
}

/** A browser context already signed in: the token is what the sign-in screen would have kept. */
export async function signedInContext(
  browser: Browser,
  stack: Stack,
  viewport = { width: 1280, height: 900 },
): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport })
  await context.addInitScript(`sessionStorage.setItem('hookledger.token', ${JSON.stringify(stack.adminToken)})`)
  return context
}

export async function publish(stack: Stack, id: string, type = 'booking.created'): Promise<void> {
  const res = await fetch(`${stack.url}/api/events`, {
    method: 'POST',
    headers: { authorization: `Bearer ${stack.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ id, type, subject: `booking://${id}`, data: { booking_id: id } }),
  })
  expect(res.status).toBe(202)
}

export async function adminGet<T>(stack: Stack, path: string): Promise<T> {
  const res = await fetch(`${stack.url}${path}`, { headers: { authorization: `Bearer ${stack.adminToken}` } })
  expect(res.status).toBe(200)
  return (await res.json()) as T
}

/** Creates an endpoint over the API; its id and one-time secret. */
export async function createEndpoint(
  stack: Stack,
  body: { url: string; event_types: string[]; description?: string; signature_scheme?: string },
): Promise<{ endpoint: { id: string; public_key: string | null }; secret: string }> {
  const res = await fetch(`${stack.url}/api/admin/webhooks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${stack.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  expect(res.status).toBe(201)
  return (await res.json()) as { endpoint: { id: string; public_key: string | null }; secret: string }
}
