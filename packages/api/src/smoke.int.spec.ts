import { describe, expect, it } from 'vitest'
import { testDatabase } from '@hookledger/testkit'
import { testApi } from './testing.js'

describe('smoke', () => {
  it('works', async () => {
    const database = await testDatabase()
    const api = testApi(database.db)
    const admin = await api.token('acme', ['admin', 'publish'])
    const created = await api.call('POST', '/api/admin/webhooks', { token: admin, body: { url: 'http://127.0.0.1:9/x', event_types: ['booking.*'] } })
    console.log(created.status, created.text)
    const id = created.body.endpoint.id
    for (const [m, p, b] of [
      ['GET', '/api/admin/webhooks/event_types'],
      ['PATCH', `/api/admin/webhooks/${id}`, { enabled: false }],
      ['PATCH', `/api/admin/webhooks/${id}`, { enabled: true, event_types: ['nope.*'] }],
      ['POST', `/api/admin/webhooks/${id}/rotate_secret`],
      ['POST', `/api/admin/webhooks/${id}/send_test`],
      ['GET', `/api/admin/webhooks/${id}/deliveries`],
      ['POST', `/api/admin/webhooks/${id}/redeliver`],
      ['PUT', `/api/admin/access_codes/c1`, { role_globs: ['wiki://**'] }],
      ['PUT', `/api/admin/embeds/e1`, { access_code_id: 'c1' }],
      ['PUT', `/api/admin/embeds/e2`, { access_code_id: 'c2' }],
      ['POST', `/api/admin/access_codes/c1/revoke`],
      ['DELETE', `/api/admin/embeds/e1`],
      ['DELETE', `/api/admin/webhooks/${id}`],
      ['GET', `/api/admin/webhooks/${id}`],
      ['POST', `/api/events`, { type: 'booking.created', subject: 'b://1', data: { x: '\u0000' } }],
      ['GET', `/api/admin/webhooks?x=1`],
      ['GET', `/api/admin/webhooks/`],
      ['PUT', `/api/admin/webhooks`],
    ] as const) {
      const r = await api.call(m, p, { token: admin, ...(b ? { body: b } : {}) })
      console.log(m, p, r.status, r.text.slice(0, 300))
    }
    const op = await api.token('x', ['operator'])
    for (const [m, p] of [['GET', '/api/operator/ledger?limit=5'], ['POST', '/api/operator/ledger/replay'], ['GET', '/api/operator/ledger/audit?endpoint_id=' + id]]) {
      const r = await api.call(m!, p!, { token: op })
      console.log(m, p, r.status, r.text.slice(0, 600))
    }
    expect(1).toBe(1)
    await database.close()
  })
})
