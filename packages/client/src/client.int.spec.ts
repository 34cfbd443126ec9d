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
import { createApi } from '@hookledger/api'
import { heldLedgerKeys } from '@hookledger/ops'
import { apiTokenCreate } from '@hookledger/store'
import { testDatabase, type TestDatabase } from '@hookledger/testkit'
import { createHookledgerClient } from './index.js'

// The client against the real app, in-process (its fetch is the app's), on a test database.
let database: TestDatabase
let client: ReturnType<typeof createHookledgerClient>
beforeAll(async () => {
  database = await testDatabase()
  const app = createApi({
    deps: {
      db: database.db,
      clock: systemClock,
      secretBox: createSecretBox(generateMasterKey()),
      egressPolicy: createEgressPolicy({ allow: [] }),
      catalog: createEventCatalog(),
      logger: silentLogger,
      rotationGraceMs: 0,
      publicBaseUrl: 'http://hookledger.test',
      ledgerKeys: heldLedgerKeys(parseLedgerSigningKey(generateLedgerSigningKey().secret)),
    },
  })
  const { token } = await apiTokenCreate(database.db, { owner_id: 'default', scopes: ['admin', 'publish'], now: new Date() })
  client = createHookledgerClient({ baseUrl: 'http://hookledger.test', token, fetch: async (req) => app.fetch(req) })
})
afterAll(() => database.close())

describe('@hookledger/client', () => {
  it('creates an endpoint, publishes, lists: typed bodies in, typed answers out', async () => {
    const created = await client.POST('/api/admin/webhooks', {
      body: { url: 'https://receiver.example/hook', event_types: ['booking.*'] },
    })
    expect(created.error).toBeUndefined()
    expect(created.data!.secret).toMatch(/^whsec_/)
    const id = created.data!.endpoint.id
    const published = await client.POST('/api/events', { body: { id: 'evt_client', type: 'booking.created', subject: 'booking://1' } })
    expect(published.response.status).toBe(202)
    expect(published.data).toEqual({ id: 'evt_client' })
    const one = await client.GET('/api/admin/webhooks/{id}', { params: { path: { id } } })
    expect(one.data!.url).toBe('https://receiver.example/hook')
  })

  it('answers refusals as the problem body, with its stable code', async () => {
    const refused = await client.POST('/api/events', { body: { id: 'evt_client_2', type: 'nobody.declared', subject: 's' } })
    expect(refused.response.status).toBe(422)
    expect(refused.error).toMatchObject({ code: 'unknown_event_type', field: 'type' })
  })
})
