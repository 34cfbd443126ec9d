import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  createEgressPolicy,
  createEventCatalog,
  createSecretBox,
  generateMasterKey,
  silentLogger,
  systemClock,
} from '@hookledger/core'
import { generateLedgerSigningKey, parseLedgerSigningKey } from '@hookledger/ledger'
import { heldLedgerKeys, OPERATIONS, type OpDeps } from '@hookledger/ops'
import type { TokenScope } from '@hookledger/store'
import { eventually, testDatabase, type TestDatabase } from '@hookledger/testkit'
import { createMcpServer, toolName } from './mcp-server.js'

let database: TestDatabase
let deps: OpDeps
const clients: Client[] = []

beforeAll(async () => {
  database = await testDatabase()
  deps = {
    db: database.db,
    clock: systemClock,
    secretBox: createSecretBox(generateMasterKey()),
    egressPolicy: createEgressPolicy({ allow: ['127.0.0.0/8'] }),
    catalog: createEventCatalog(),
    logger: silentLogger,
    rotationGraceMs: 3_600_000,
    publicBaseUrl: 'http://hookledger.test',
    ledgerKeys: heldLedgerKeys(parseLedgerSigningKey(generateLedgerSigningKey().secret)),
  }
})
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()))
  await database.close()
})

/** A client talking to a fresh server in-process; tools listed first so outputs are validated. */
async function connect(owner_id: string, scopes: TokenScope[]) {
  const server = createMcpServer({ deps, owner_id, scopes })
  const client = new Client({ name: 'mcp-server.int.spec', version: '0' })
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
  await Promise.all([server.connect(serverSide), client.connect(clientSide)])
  clients.push(client)
  const { tools } = await client.listTools()
  const called = new Set<string>()
  // `any`: tests read arbitrary fields of answers.
  const call = async (name: string, args: Record<string, unknown> = {}): Promise<any> => {
    called.add(name)
    const res = await client.callTool({ name, arguments: args })
    const text = (res.content as { type: string; text: string }[])[0]!.text
    if (res.isError) return { isError: true, problem: JSON.parse(text) }
    // The text content carries the same answer as the structured one.
    expect(JSON.parse(text)).toEqual(res.structuredContent)
    return res.structuredContent
  }
  return { client, tools, call, called }
}

describe('createMcpServer: the MCP projection of the registry', () => {
  it('lists one tool per op the scopes allow, with the op input as JSON Schema', async () => {
    const owner = await connect('acme', ['admin', 'publish'])
    const ownerOps = OPERATIONS.filter((op) => op.scope !== 'operator')
    expect(owner.tools.map((t) => t.name).sort()).toEqual(ownerOps.map(toolName).sort())
    const create = owner.tools.find((t) => t.name === 'webhooks_create')!
    expect(create.description).toContain('POST /api/admin/webhooks')
    expect(create.inputSchema).toMatchObject({
      type: 'object',
      required: expect.arrayContaining(['url', 'event_types']),
      additionalProperties: false,
    })
    expect(create.inputSchema).not.toHaveProperty('$schema')
    expect(create.outputSchema).toMatchObject({ type: 'object' })
    expect(owner.tools.find((t) => t.name === 'webhooks_list')!.annotations).toMatchObject({
      readOnlyHint: true,
    })

    const publisher = await connect('acme', ['publish'])
    expect(publisher.tools.map((t) => t.name)).toEqual(['events_publish'])
    const operator = await connect('ignored', ['operator'])
    expect(operator.tools.map((t) => t.name).sort()).toEqual([
      'event_types_declare',
      'event_types_deprecate',
      'event_types_list',
      'event_types_update',
      'ledger_audit',
      'ledger_checkpoint',
      'ledger_export',
      'ledger_public_key',
      'ledger_read',
      'ledger_replay',
      'ledger_snapshot',
      'ledger_verify',
      'owners_get',
      'owners_list',
      'owners_resume',
      'owners_set_limits',
      'owners_suspend',
    ])
  })

  it('runs every tool like the HTTP route; answers match their output schemas', async () => {
    const acme = await connect('acme', ['admin', 'publish'])
    const { call } = acme

    const types = await call('webhooks_event_types')
    expect(types.data.map((t: { type: string }) => t.type)).toContain('booking.created')
    const created = await call('webhooks_create', {
      url: 'http://127.0.0.1:9/hook',
      event_types: ['booking.*'],
    })
    expect(created.secret).toMatch(/^whsec_/)
    const id = created.endpoint.id as string
    expect(await call('webhooks_list')).toEqual({ data: [created.endpoint], next_cursor: null })
    expect(await call('webhooks_get', { id })).toEqual(created.endpoint)
    expect(await call('webhooks_update', { id, description: 'via mcp' })).toMatchObject({
      id,
      description: 'via mcp',
    })
    expect((await call('webhooks_rotate_secret', { id })).secret).toMatch(/^whsec_/)
    const sent = await call('webhooks_send_test', { id })
    expect((await call('webhooks_deliveries', { id, limit: 5 })).data).toEqual([
      expect.objectContaining({ id: sent.delivery_id }),
    ])
    expect((await call('webhooks_attempts', { id: sent.delivery_id })).delivery.id).toBe(
      sent.delivery_id,
    )
    expect(await call('webhooks_redeliver', { id })).toEqual({ requeued: 0, skipped: 0 })
    // The test event's delivery is still waiting: in flight, nothing to recover.
    const since = new Date(Date.now() - 3_600_000).toISOString()
    expect(await call('webhooks_recover', { id, since, dry_run: true })).toMatchObject({ dry_run: true, scanned: 1, in_flight: 1, would_enqueue: 0 })
    expect(await call('webhooks_stats', { id, window: '7d' })).toMatchObject({ window: '7d', attempts: 0, success_rate: null })
    expect((await call('deliveries_list', { endpoint_id: id })).data).toEqual([
      expect.objectContaining({ id: sent.delivery_id, waiting_reason: expect.objectContaining({ kind: 'due' }) }),
    ])
    expect(await call('deliveries_redeliver', { id: sent.delivery_id })).toMatchObject({
      isError: true,
      problem: { code: 'delivery_in_progress' },
    })
    expect((await call('events_explain', { id: sent.event_id })).data).toEqual([
      expect.objectContaining({ endpoint_id: id, delivery_id: sent.delivery_id }),
    ])
    const receipt = await call('webhooks_receipt', { id: sent.delivery_id })
    expect(receipt).toMatchObject({ format: 'hookledger.receipt.v2', delivery_id: sent.delivery_id })
    const published = await call('events_publish', {
      type: 'booking.created',
      subject: 'booking://1',
    })
    expect(published.id).toMatch(/^evt_/)

    await call('access_codes_put', { id: 'staff', role_globs: ['wiki://**'] })
    expect((await call('access_codes_get', { id: 'staff' })).role_globs).toEqual(['wiki://**'])
    await call('embeds_put', { id: 'site', access_code_id: 'staff' })
    expect((await call('embeds_get', { id: 'site' })).access_code_id).toBe('staff')
    expect(await call('embeds_delete', { id: 'site' })).toEqual({ id: 'site', deleted: true })
    expect((await call('access_codes_revoke', { id: 'staff' })).revoked_at).not.toBeNull()
    expect(await call('webhooks_delete', { id })).toMatchObject({ id, deleted: true })
    expect([...acme.called].sort()).toEqual(acme.tools.map((t) => t.name).sort())

    const operator = await connect('ignored', ['operator'])
    // The feed shows rows once every older transaction of the cluster has ended (other test
    // files share it): wait for this session's rows to come through.
    const mine = await eventually('the feed to show acme', async () => {
      const ledger = await operator.call('ledger_read', { limit: 200 })
      const rows = ledger.data.filter((e: { owner_id: string }) => e.owner_id === 'acme') as { owner_id: string; actor: string }[]
      return rows.length > 0 && rows
    })
    expect(mine.length).toBeGreaterThan(0)
    // The ledger records who acted: this session, not a token.
    expect(new Set(mine.map((e: { actor: string }) => e.actor))).toContain('owner:mcp')
    // The catalog: declared, changed, deprecated, listed — each a ledger entry replay folds.
    expect(await operator.call('event_types_declare', { name: 'invoice.paid', exposure: 'webhook', schema: { type: 'object' } })).toMatchObject({ name: 'invoice.paid', declared: true })
    expect(await operator.call('event_types_update', { name: 'invoice.paid', description: 'Paid.' })).toMatchObject({ description: 'Paid.' })
    expect((await operator.call('event_types_deprecate', { name: 'invoice.paid', reason: 'test' })).deprecated).toMatchObject({ reason: 'test' })
    expect((await operator.call('event_types_list', { exposure: 'webhook' })).data).toContainEqual(expect.objectContaining({ name: 'invoice.paid' }))
    const audit = await operator.call('ledger_audit', { endpoint_id: id })
    expect(audit.data.length).toBeGreaterThan(0)
    expect((await operator.call('ledger_replay')).differences).toEqual([])
    const sealed = await operator.call('ledger_checkpoint')
    expect(sealed.data[0]).toMatchObject({ seq: 1 })
    expect((await operator.call('ledger_public_key')).public_key).toMatch(/^hlpk_/)
    expect(await operator.call('ledger_verify', { chain_only: true })).toMatchObject({ ok: true, problems: [] })
    expect(await operator.call('ledger_snapshot')).toMatchObject({ fresh: true, snapshot: { seq: 1 } })
    expect(await operator.call('ledger_verify', {})).toMatchObject({ ok: true, snapshot: { seq: 1, digest_matches: true } })
    expect((await operator.call('ledger_export', {})).data[0]).toMatchObject({ type: 'header' })
    // Owners: limits, suspension, usage — each change a ledger entry replay folds.
    expect(await operator.call('owners_set_limits', { id: 'acme', max_endpoints: 5, weight: 2 })).toMatchObject({ id: 'acme', max_endpoints: 5, weight: 2 })
    expect((await operator.call('owners_suspend', { id: 'acme', reason: 'mcp' })).suspended).toMatchObject({ reason: 'mcp' })
    expect((await operator.call('owners_resume', { id: 'acme' })).suspended).toBeNull()
    expect((await operator.call('owners_get', { id: 'acme' })).usage).toMatchObject({ endpoints: 0 })
    expect((await operator.call('owners_list')).data).toContainEqual(expect.objectContaining({ id: 'acme', weight: 2 }))
    expect((await operator.call('ledger_replay')).differences).toEqual([])
    expect([...operator.called].sort()).toEqual(operator.tools.map((t) => t.name).sort())
  })

  it('answers refusals as tool errors naming the field, never a protocol failure', async () => {
    const { call, client } = await connect('acme', ['admin', 'publish'])
    expect(await call('webhooks_get', { id: 'nope' })).toEqual({
      isError: true,
      problem: { code: 'invalid_input', message: 'id: must be a UUID', field: 'id' },
    })
    expect((await call('webhooks_list', { limit: 500 })).problem.field).toBe('limit')
    expect((await call('webhooks_list', { colour: 'red' })).problem).toMatchObject({
      code: 'invalid_input',
      field: 'colour',
    })
    const nul = await call('events_publish', { type: 'booking.created', subject: 'a\u0000b' })
    expect(nul.problem).toMatchObject({ code: 'invalid_input', field: 'subject' })
    expect(
      (await call('webhooks_create', { url: 'http://127.0.0.1:9/', event_types: ['nope.*'] }))
        .problem,
    ).toMatchObject({ code: 'glob_matches_nothing', field: 'event_types.0' })
    expect(
      (await call('webhooks_get', { id: '00000000-0000-4000-8000-000000000000' })).problem,
    ).toMatchObject({ code: 'not_found' })
    // A tool this session does not have is a protocol error (as an unknown tool is).
    await expect(client.callTool({ name: 'ledger_replay', arguments: {} })).rejects.toThrow(
      /unknown tool "ledger_replay"/,
    )
  })

  it("keeps owners apart: one owner's session never sees another's endpoint", async () => {
    const acme = await connect('acme-iso', ['admin'])
    const other = await connect('other-iso', ['admin'])
    const { endpoint } = await acme.call('webhooks_create', {
      url: 'http://127.0.0.1:9/hook',
      event_types: ['booking.*'],
    })
    expect(await other.call('webhooks_list')).toEqual({ data: [], next_cursor: null })
    expect((await other.call('webhooks_get', { id: endpoint.id })).problem.code).toBe('not_found')
  })
})
