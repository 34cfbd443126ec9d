import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OPERATIONS } from '@hookledger/ops'
import { testDatabase, type TestDatabase } from '@hookledger/testkit'
import { HOOKLEDGER_BIN, ROOT, runCli } from './cli-process.js'

const dir = mkdtempSync(path.join(tmpdir(), 'hookledger-mcp-e2e-'))
let database: TestDatabase
let env: Record<string, string>

beforeAll(async () => {
  database = await testDatabase()
  env = {
    ...(Object.fromEntries(
      Object.entries(process.env).filter(([, v]) => v !== undefined),
    ) as Record<string, string>),
    DATABASE_URL: database.url,
    HOOKLEDGER_DATA_DIR: dir,
    HOOKLEDGER_MASTER_KEY: Buffer.alloc(32, 7).toString('base64'),
    HOOKLEDGER_EGRESS_ALLOW: '127.0.0.0/8',
    HOOKLEDGER_CATALOG_FILE: '',
    LOG_LEVEL: 'warn',
  }
})
afterAll(async () => {
  await database.close()
  rmSync(dir, { recursive: true, force: true })
})

/** `npx hookledger mcp --owner <owner>` (as an MCP client is configured) driven by the SDK's own client over stdio. */
async function mcpSession(owner: string) {
  const transport = new StdioClientTransport({
    command: 'npx',
    args: ['hookledger', 'mcp', '--owner', owner],
    cwd: ROOT,
    env,
    stderr: 'pipe',
  })
  let stderr = ''
  transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString()))
  const client = new Client({ name: 'mcp.e2e.spec', version: '0' })
  // A stray non-protocol line on stdout surfaces here as a parse error.
  const errors: Error[] = []
  client.onerror = (err) => errors.push(err)
  await client.connect(transport)
  // `any`: tests read arbitrary fields of answers.
  const call = async (name: string, args: Record<string, unknown> = {}): Promise<any> =>
    client.callTool({ name, arguments: args })
  return { client, call, errors, stderr: () => stderr }
}

describe('hookledger mcp: the MCP projection over stdio', () => {
  it('serves the owner ops as tools for that owner only; bad input is a tool error', async () => {
    const [acme, other] = await Promise.all([mcpSession('acme'), mcpSession('other')])
    try {
      const { tools } = await acme.client.listTools()
      const expected = OPERATIONS.filter((op) => op.scope !== 'operator').map((op) =>
        op.name.replaceAll('.', '_'),
      )
      expect(tools.map((t) => t.name).sort()).toEqual(expected.sort())
      expect(tools.map((t) => t.name)).not.toContain('ledger_read')

      const created = await acme.call('webhooks_create', {
        url: 'http://127.0.0.1:9/hook',
        event_types: ['booking.*'],
      })
      expect(created.isError, JSON.stringify(created.content)).toBeFalsy()
      const { endpoint, secret } = created.structuredContent as {
        endpoint: { id: string }
        secret: string
      }
      expect(endpoint.id).toMatch(/^[0-9a-f-]{36}$/)
      expect(secret).toMatch(/^whsec_/)
      expect(JSON.parse(created.content[0].text)).toEqual(created.structuredContent)

      const listed = await acme.call('webhooks_list')
      expect(listed.structuredContent).toEqual({
        data: [expect.objectContaining({ id: endpoint.id, event_types: ['booking.*'] })],
        next_cursor: null,
      })
      expect(JSON.stringify(listed)).not.toContain(secret)

      const published = await acme.call('events_publish', {
        type: 'booking.created',
        subject: 'booking://42',
      })
      expect(published.isError, JSON.stringify(published.content)).toBeFalsy()
      expect(published.structuredContent.id).toMatch(/^evt_/)

      const bad = await acme.call('webhooks_get', { id: 'nope' })
      expect(bad.isError).toBe(true)
      expect(JSON.parse(bad.content[0].text)).toMatchObject({
        code: 'invalid_input',
        field: 'id',
      })

      const elsewhere = await other.call('webhooks_list')
      expect(elsewhere.structuredContent).toEqual({ data: [], next_cursor: null })
      const peek = await other.call('webhooks_get', { id: endpoint.id })
      expect(JSON.parse(peek.content[0].text)).toMatchObject({ code: 'not_found' })

      expect([...acme.errors, ...other.errors]).toEqual([])
    } finally {
      await Promise.all([acme.client.close(), other.client.close()])
    }
    expect(acme.stderr() + other.stderr()).toBe('')
  })

  it('writes only protocol to stdout and exits 0 when stdin closes', async () => {
    const child = spawn(HOOKLEDGER_BIN, ['mcp', '--owner', 'acme'], {
      cwd: ROOT,
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    const exit = new Promise<number | null>((resolve) => child.on('close', resolve))
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'raw', version: '0' },
      },
    }
    child.stdin.write(JSON.stringify(initialize) + '\n')
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no answer:\n${stderr}`)), 15_000)
      child.stdout.on('data', () => {
        if (!stdout.includes('\n')) return
        clearTimeout(t)
        resolve()
      })
    })
    child.stdin.end()
    expect(await exit, stderr).toBe(0)
    const lines = stdout.trim().split('\n')
    expect(lines).toHaveLength(1)
    expect(JSON.parse(lines[0]!)).toMatchObject({
      jsonrpc: '2.0',
      id: 1,
      result: { serverInfo: { name: 'hookledger' }, capabilities: { tools: {} } },
    })
  })

  it('refuses a missing owner with exit 2 and the reason', async () => {
    const res = await runCli(['mcp'], env)
    expect(res.code).toBe(2)
    expect(res.stderr).toContain('--owner is required')
    expect(res.stdout).toBe('')
  })
})
