// @hookledger/publisher and @hookledger/client as an application outside this repository gets
// them: `npm pack`ed (their prepack builds the ESM and CommonJS halves), installed from the
// tarballs into a fresh app in a temporary directory, type-checked by tsc as a CommonJS app
// (npm's default, "module": "node16") and as an ES module app, and run — a newcomer's first
// contact: the app declares its own type, order.created with a JSON Schema, through the typed
// client (an operator token), publishes it and booking.created inside its own Kysely transaction
// as the database's publisher role, and is refused an undeclared type with the hint on how to
// declare it and data against the schema with the JSON pointer; a `*` endpoint receives both.
import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { serve, type ServerType } from '@hono/node-server'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { adminDbOf, engineHarness, testApi, type EngineHarness } from '@hookledger/testkit'
import { ROOT } from './cli-process.js'

// npm install from the registry (cache first) and two tsc runs: minutes on a cold CI machine.
const TIMEOUT_MS = 300_000
const PACKAGES = ['core', 'publisher', 'client'] as const
const TSC = path.join(ROOT, 'node_modules/typescript/bin/tsc')

/** The environment of a command outside the repository: none of npm's own `npm run` context. */
const outsideEnv = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !/^(npm_(package_|lifecycle_|config_(local_prefix|prefix|workspaces?|include_workspace_root|global)$)|INIT_CWD$)/i.test(k)),
)

/** Runs a command to completion; rejects with everything it printed if it fails. */
function run(file: string, args: string[], cwd: string, timeout = TIMEOUT_MS): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { cwd, env: outsideEnv, timeout, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${file} ${args.join(' ')} (in ${cwd}) failed: ${error.message}\n${stdout}\n${stderr}`))
      else resolve(stdout)
    })
  })
}

const installedVersion = (name: string): string =>
  (JSON.parse(readFileSync(path.join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version

/**
 * The application, the same text for both module systems: its own database type, its own kysely
 * transaction handed to publish without a cast, a refusal caught as PublishError, the client.
 */
const APP_MAIN = `import { Kysely, PostgresDialect, type Generated } from 'kysely'
import pg from 'pg'
import { publish, PublishError } from '@hookledger/publisher'
import { createHookledgerClient } from '@hookledger/client'

interface AppDatabase {
  bookings: { id: Generated<string>; guest: string }
}

async function main(): Promise<void> {
  const [databaseUrl, apiUrl, token, operatorToken, endpointId, eventId] = process.argv.slice(2) as [string, string, string, string, string, string]
  const db = new Kysely<AppDatabase>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: databaseUrl }) }) })
  try {
    // The installation's own event type, declared once (a second app finds it declared).
    const operator = createHookledgerClient({ baseUrl: apiUrl, token: operatorToken })
    const declared = await operator.POST('/api/operator/event_types', {
      body: {
        name: 'order.created',
        exposure: 'webhook',
        description: 'An order was placed',
        schema: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'], additionalProperties: false },
      },
    })
    if (declared.error && declared.error.code !== 'event_type_exists') throw new Error(\`\${declared.error.code}: \${declared.error.detail}\`)
    const published = await db.transaction().execute(async (trx) => {
      const booking = await trx.insertInto('bookings').values({ guest: 'Ada' }).returning('id').executeTakeFirstOrThrow()
      await publish(trx, { owner_id: 'default', id: \`\${eventId}_order\`, type: 'order.created', subject: \`order://\${booking.id}\`, data: { order_id: String(booking.id) } })
      return publish(trx, { owner_id: 'default', id: eventId, type: 'booking.created', subject: \`booking://\${booking.id}\`, data: { booking_id: booking.id } })
    })
    const refusal = async (event: Parameters<typeof publish>[1]) =>
      db.transaction().execute(async (trx) => {
        try {
          await publish(trx, event)
          return null
        } catch (err) {
          if (!(err instanceof PublishError)) throw err
          return { code: err.code, pointer: err.pointer ?? null, hint: err.message.includes('POST /api/operator/event_types') }
        }
      })
    const refused = await refusal({ owner_id: 'default', type: 'nobody.declared', subject: 'booking://0' })
    const invalid = await refusal({ owner_id: 'default', type: 'order.created', subject: 'order://0', data: { order_id: 42 } })
    const hookledger = createHookledgerClient({ baseUrl: apiUrl, token })
    const { data, error } = await hookledger.GET('/api/admin/webhooks/{id}', { params: { path: { id: endpointId } } })
    if (error) throw new Error(\`\${error.code}: \${error.detail}\`)
    console.log(JSON.stringify({ published, refused, invalid, event_types: data.event_types }))
  } finally {
    await db.destroy()
  }
}

main().catch((err: unknown) => {
  console.error(err)
  process.exitCode = 1
})
`

// A strict application on node16 resolution, which reads each package's "import" or "require"
// declarations as the file's module system dictates; skipLibCheck off, so an error in a shipped
// .d.ts fails here too.
const APP_TSCONFIG = {
  compilerOptions: {
    module: 'node16',
    moduleResolution: 'node16',
    target: 'es2022',
    strict: true,
    esModuleInterop: true,
    skipLibCheck: false,
    types: ['node'],
    rootDir: '.',
    outDir: 'dist',
    noEmitOnError: true,
  },
  include: ['main.ts'],
}

let work: string
let app: string
let h: EngineHarness
let server: ServerType | undefined
let apiUrl: string
let token: string
let operatorToken: string
let endpointId: string

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), 'hookledger-installed-'))
  const tarballs = path.join(work, 'tarballs')
  mkdirSync(tarballs)
  await run('npm', ['pack', ...PACKAGES.flatMap((p) => ['-w', `@hookledger/${p}`]), '--pack-destination', tarballs], ROOT)

  // npm's default package: no "type", so CommonJS; the ES module app is a folder marked "module".
  app = path.join(work, 'app')
  mkdirSync(path.join(app, 'cjs'), { recursive: true })
  mkdirSync(path.join(app, 'esm'))
  const pinned = (names: string[]) => Object.fromEntries(names.map((n) => [n, installedVersion(n)]))
  writeFileSync(
    path.join(app, 'package.json'),
    JSON.stringify({
      name: 'bookings-app',
      version: '1.0.0',
      private: true,
      dependencies: {
        ...Object.fromEntries(PACKAGES.map((p) => [`@hookledger/${p}`, `file:../tarballs/hookledger-${p}-${installedVersion(`@hookledger/${p}`)}.tgz`])),
        // The versions this repository's npm ci put in the npm cache, so --prefer-offline finds them.
        ...pinned(['kysely', 'pg']),
      },
      devDependencies: pinned(['@types/node', '@types/pg']),
    }, null, 2),
  )
  writeFileSync(path.join(app, 'esm', 'package.json'), JSON.stringify({ type: 'module' }))
  for (const flavour of ['cjs', 'esm']) {
    writeFileSync(path.join(app, flavour, 'main.ts'), APP_MAIN)
    writeFileSync(path.join(app, flavour, 'tsconfig.json'), JSON.stringify(APP_TSCONFIG, null, 2))
  }
  await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund'], app)

  h = await engineHarness()
  const admin = adminDbOf(h.db)
  // The application's own table, beside hookledger's schema; the app runs as the publisher role.
  await sql`create table public.bookings (id bigint generated always as identity primary key, guest text not null)`.execute(admin)
  await sql`grant select, insert on public.bookings to ${sql.id(h.roleName('publisher'))}`.execute(admin)
  endpointId = (await h.createEndpoint({ event_types: ['*'] })).endpoint.id
  const api = testApi(h.db)
  token = await api.token('default', ['admin'])
  operatorToken = await api.token('', ['operator'])
  const port = await new Promise<number>((resolve) => {
    server = serve({ fetch: api.app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => resolve(info.port))
  })
  apiUrl = `http://127.0.0.1:${port}`
}, TIMEOUT_MS)

afterAll(async () => {
  server?.close()
  await h?.close()
  if (work) rmSync(work, { recursive: true, force: true })
})

describe('the packed packages, installed into an application outside the repository', () => {
  it('ship ESM and CommonJS builds with their declarations; no tests, build info or code generator', () => {
    for (const p of PACKAGES) {
      const dir = path.join(app, 'node_modules', '@hookledger', p)
      for (const f of ['dist/index.js', 'dist/index.d.ts', 'dist/cjs/index.js', 'dist/cjs/index.d.ts', 'dist/cjs/package.json', 'README.md']) {
        expect(existsSync(path.join(dir, f)), `${p}: ${f}`).toBe(true)
      }
      expect(existsSync(path.join(dir, 'dist/.tsbuildinfo')), `${p}: build info`).toBe(false)
      const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { private?: boolean; dependencies?: Record<string, string> }
      expect(manifest.private, p).toBeUndefined()
      expect(Object.keys(manifest.dependencies ?? {}), p).not.toContain('openapi-typescript')
    }
    expect(existsSync(path.join(app, 'node_modules', 'openapi-typescript'))).toBe(false)
    expect(existsSync(path.join(app, 'node_modules', '@hookledger', 'publisher', 'src', 'publisher.int.spec.ts'))).toBe(false)
  })

  for (const [flavour, loads] of [['cjs', /require\("@hookledger\/publisher"\)/], ['esm', /from '@hookledger\/publisher'/]] as const) {
    it(`${flavour === 'cjs' ? 'a CommonJS' : 'an ES module'} app type-checks (node16) and publishes in its own transaction; the event is delivered`, async () => {
      await run(process.execPath, [TSC, '-p', path.join(app, flavour)], app)
      const compiled = path.join(app, flavour, 'dist', 'main.js')
      expect(readFileSync(compiled, 'utf8')).toMatch(loads)
      const eventId = `evt_installed_${flavour}`
      const out = await run(process.execPath, [compiled, h.roleUrl('publisher'), apiUrl, token, operatorToken, endpointId, eventId], app, 60_000)
      expect(JSON.parse(out)).toEqual({
        published: eventId,
        refused: { code: 'unknown_event_type', pointer: null, hint: true },
        invalid: { code: 'event_data_invalid', pointer: '/data/order_id', hint: false },
        event_types: ['*'],
      })

      const stored = await h.db.selectFrom('events').select(['id', 'type']).where('id', 'in', [eventId, `${eventId}_order`]).orderBy('id').execute()
      expect(stored).toEqual([{ id: eventId, type: 'booking.created' }, { id: `${eventId}_order`, type: 'order.created' }])
      const delivered = () => [eventId, `${eventId}_order`].every((id) => h.receiver.requests.some((r) => r.headers['webhook-id'] === id))
      for (let i = 0; i < 8 && !delivered(); i++) await h.step()
      expect(delivered()).toBe(true)
      expect((await h.replay()).differences).toEqual([])
    }, TIMEOUT_MS)
  }
})
