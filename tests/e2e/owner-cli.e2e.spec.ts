import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Webhook } from 'standardwebhooks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { apiTokenVerify } from '@hookledger/store'
import { eventually, TestReceiver, testDatabase, type TestDatabase } from '@hookledger/testkit'
import { runCli, runInProcess, startServe } from './cli-process.js'

const dir = mkdtempSync(path.join(tmpdir(), 'hookledger-owner-e2e-'))
let database: TestDatabase
let env: NodeJS.ProcessEnv

beforeAll(async () => {
  database = await testDatabase()
  env = {
    DATABASE_URL: database.url,
    HOOKLEDGER_DATA_DIR: dir,
    HOOKLEDGER_MASTER_KEY: Buffer.alloc(32, 7).toString('base64'),
    HOOKLEDGER_EGRESS_ALLOW: '127.0.0.0/8',
    HOOKLEDGER_CATALOG_FILE: '',
    PORT: '0',
    LOG_LEVEL: 'warn',
  }
})
afterAll(async () => {
  await database.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('hookledger op <name>: the CLI projection of the registry', () => {
  it('creates and lists endpoints per owner; refuses bad input naming the field', async () => {
    const created = await runCli(
      [
        'op',
        'webhooks.create',
        '--owner',
        'acme',
        '--json',
        JSON.stringify({ url: 'https://example.com/hook', event_types: ['booking.*'] }),
      ],
      env,
    )
    expect(created.code, created.stderr).toBe(0)
    const { endpoint, secret } = JSON.parse(created.stdout) as {
      endpoint: { id: string }
      secret: string
    }
    expect(secret).toMatch(/^whsec_/)

    const listed = await runInProcess(['op', 'webhooks.list', '--owner', 'acme', '--json', '{}'], env)
    expect(listed.code, listed.stderr).toBe(0)
    const page = JSON.parse(listed.stdout) as {
      data: { id: string; event_types: string[] }[]
      next_cursor: string | null
    }
    expect(page).toEqual({
      data: [expect.objectContaining({ id: endpoint.id, event_types: ['booking.*'] })],
      next_cursor: null,
    })
    expect(listed.stdout).not.toContain(secret)

    const other = await runInProcess(['op', 'webhooks.list', '--owner', 'globex', '--json', '{}'], env)
    expect(JSON.parse(other.stdout)).toEqual({ data: [], next_cursor: null })

    const bad = await runInProcess(
      [
        'op',
        'webhooks.create',
        '--owner',
        'acme',
        '--json',
        '{"url":"https://example.com","event_types":["nope.*"]}',
      ],
      env,
    )
    expect(bad.code).toBe(1)
    expect(bad.stderr).toContain('glob_matches_nothing')
    expect(bad.stderr).toContain('event_types.0')
    const shape = await runInProcess(
      ['op', 'webhooks.list', '--owner', 'acme', '--json', '{"limit":500}'],
      env,
    )
    expect(shape.code).toBe(2)
    expect(shape.stderr).toContain('limit')

    // Tokens: created once, listed without their secret, revoked for good.
    const minted = await runCli(
      ['token', 'create', '--owner', 'acme', '--scopes', 'publish', '--label', 'ci', '--json'],
      env,
    )
    expect(minted.code, minted.stderr).toBe(0)
    const token = JSON.parse(minted.stdout) as { token: string; id: string; scopes: string[] }
    expect(token.scopes).toEqual(['publish'])
    expect(await apiTokenVerify(database.db, token.token)).toMatchObject({
      owner_id: 'acme',
      scopes: ['publish'],
    })
    const tokens = await runInProcess(['token', 'list', '--owner', 'acme', '--json'], env)
    expect(tokens.stdout).not.toContain(token.token)
    expect(JSON.parse(tokens.stdout)).toEqual([
      expect.objectContaining({ id: token.id, label: 'ci', revoked_at: null }),
    ])
    const revoked = await runInProcess(['token', 'revoke', token.id], env)
    expect(revoked.code, revoked.stderr).toBe(0)
    expect(await apiTokenVerify(database.db, token.token)).toBeNull()

    // Operator ops need no owner.
    // The feed shows rows once every older transaction of the shared cluster has ended.
    const rows = await eventually('the feed to show the entries', async () => {
      const feed = await runInProcess(['op', 'ledger.read', '--json', '{"limit":5}'], env)
      expect(feed.code, feed.stderr).toBe(0)
      const data = (JSON.parse(feed.stdout) as { data: { kind: string }[] }).data
      return data.length > 0 && data
    })
    expect(rows[0]!.kind).toBe('endpoint.created')
  })
})

describe('the catalog file (HOOKLEDGER_CATALOG_FILE)', () => {
  it('a bad file stops the start with exit 2 and a message naming the entry and the field', async () => {
    const cases: [string, string[]][] = [
      ['[{"type":"invoice.paid","exposre":"webhook"}]', ['entry 0', '"exposre"', 'unknown field']],
      ['[{"type":"invoice.paid"},{"type":"a.b","exposure":"public"}]', ['entry 1', '"exposure"']],
      [
        '[{"type":"booking.created","exposure":"internal"}]',
        ['entry 0', '"exposure"', 'seed type'],
      ],
      ['{"type":"x.y"}', ['JSON array']],
      ['[{"type":', ['not valid JSON']],
    ]
    // The first through the real binary, the rest in-process: the same `main`, the same checks.
    const runs = await Promise.all(
      cases.map(([text], i) => {
        const file = path.join(dir, `bad-catalog-${i}.json`)
        writeFileSync(file, text)
        return (i === 0 ? runCli : runInProcess)(['serve'], { ...env, HOOKLEDGER_CATALOG_FILE: file })
      }),
    )
    for (const [i, [text, expected]] of cases.entries()) {
      const res = runs[i]!
      expect(res.code, res.stderr).toBe(2)
      expect(res.stderr).toContain('HOOKLEDGER_CATALOG_FILE')
      for (const part of expected) expect(res.stderr, text).toContain(part)
    }
    const missing = await runInProcess(['serve'], {
      ...env,
      HOOKLEDGER_CATALOG_FILE: path.join(dir, 'absent.json'),
    })
    expect(missing.code).toBe(2)
    expect(missing.stderr).toContain('ENOENT')
  })
})

describe('serve at LOG_LEVEL=debug', () => {
  it('logs every request, and never a webhook secret or a bearer token', async () => {
    const catalog = path.join(dir, 'catalog.json')
    writeFileSync(
      catalog,
      JSON.stringify([
        { type: 'invoice.paid', exposure: 'webhook', group: 'billing' },
        { type: 'cache.flushed' },
      ]),
    )
    const serveEnv = { ...env, LOG_LEVEL: 'debug', HOOKLEDGER_CATALOG_FILE: catalog }
    const serve = await startServe([], serveEnv)
    let verifier: Webhook | null = null
    const receiver = await new TestReceiver((req) => {
      verifier!.verify(req.body, req.headers as Record<string, string>)
      return { status: 204 }
    }).start()
    const secrets: string[] = []
    let token = ''
    try {
      const minted = await runInProcess(
        ['token', 'create', '--owner', 'acme', '--scopes', 'admin,publish', '--json'],
        env,
      )
      token = (JSON.parse(minted.stdout) as { token: string }).token
      const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
      const types = await fetch(`${serve.url}/api/admin/webhooks/event_types`, { headers: auth })
      const names = ((await types.json()) as { data: { type: string }[] }).data.map((t) => t.type)
      expect(names).toContain('invoice.paid')
      expect(names).not.toContain('cache.flushed')

      const created = await fetch(`${serve.url}/api/admin/webhooks`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ url: receiver.url(), event_types: ['invoice.*'] }),
      })
      const { endpoint, secret } = (await created.json()) as {
        endpoint: { id: string }
        secret: string
      }
      secrets.push(secret)
      const rotated = await fetch(`${serve.url}/api/admin/webhooks/${endpoint.id}/rotate_secret`, {
        method: 'POST',
        headers: auth,
      })
      const next = ((await rotated.json()) as { secret: string }).secret
      secrets.push(next)
      verifier = new Webhook(next)
      const published = await fetch(`${serve.url}/api/events`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ id: 'evt_invoice', type: 'invoice.paid', subject: 'invoice://1' }),
      })
      expect(published.status).toBe(202)
      await receiver.waitFor(1, 20_000)
      // The settle (and its log lines) has landed once the delivery reads completed.
      await eventually('evt_invoice completed', async () => {
        const d = await database.db.selectFrom('deliveries').select('state').where('event_id', '=', 'evt_invoice').executeTakeFirst()
        return d?.state === 'completed'
      })
    } finally {
      process.kill(serve.pid, 'SIGTERM')
      const code = await serve.exit
      await receiver.close()
      expect(code, serve.output()).toBe(0)
    }
    const output = serve.output()
    expect(output).toContain('"msg":"api:request"')
    expect(output).toContain('"op":"webhooks.create"')
    expect(output).toContain('"op":"webhooks.rotate_secret"')
    for (const secret of secrets) {
      expect(output).not.toContain(secret)
      expect(output).not.toContain(secret.slice('whsec_'.length))
    }
    expect(output).not.toContain(token)
  })
})
