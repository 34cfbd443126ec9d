import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { sql } from 'kysely'
import { engineHarness, type EngineHarness, testApi, type TestApi } from '@hookledger/testkit'

let h: EngineHarness
let api: TestApi
beforeEach(async () => {
  h = await engineHarness({ start: new Date().toISOString() })
  api = testApi(h.db, { clock: h.clock, secretBox: h.secretBox })
})
afterEach(() => h.close())

/** Every form a webhook secret could leak in: as issued, its base64 key, the key's bytes in hex. */
function forms(secret: string): string[] {
  const base64 = secret.slice('whsec_'.length)
  return [
    secret,
    base64,
    Buffer.from(base64, 'base64').toString('hex'),
    Buffer.from(base64, 'base64').toString('base64url'),
  ]
}

describe('webhook secrets', () => {
  it('appear only in the create and rotate answers: never in another answer, never in plain text in any table', async () => {
    const admin = await api.token(h.owner, ['admin', 'publish'])
    const operator = await api.token('', ['operator'])
    const created = await api.call('POST', '/api/admin/webhooks', {
      token: admin,
      body: { url: h.receiver.url(), event_types: ['*'] },
    })
    const id = created.body.endpoint.id as string
    const first = created.body.secret as string
    const second = (
      await api.call('POST', `/api/admin/webhooks/${id}/rotate_secret`, { token: admin })
    ).body.secret as string
    // A delivery makes the worker unseal both (grace window) and record what it signed with.
    await api.call('POST', '/api/events', {
      token: admin,
      body: { id: 'evt_1', type: 'booking.created', subject: 'booking://1' },
    })
    await h.step()
    expect(h.receiver.requests).toHaveLength(1)
    const deliveries = await api.call('GET', `/api/admin/webhooks/${id}/deliveries`, {
      token: admin,
    })
    const answers = [
      deliveries,
      await api.call('GET', '/api/admin/webhooks', { token: admin }),
      await api.call('GET', `/api/admin/webhooks/${id}`, { token: admin }),
      await api.call('PATCH', `/api/admin/webhooks/${id}`, {
        token: admin,
        body: { description: 'x' },
      }),
      await api.call('GET', `/api/admin/deliveries/${deliveries.body.data[0].id}/attempts`, {
        token: admin,
      }),
      await api.call('GET', '/api/operator/ledger?limit=200', { token: operator }),
      await api.call('GET', `/api/operator/ledger/audit?endpoint_id=${id}`, { token: operator }),
      await api.call('POST', '/api/operator/ledger/replay', { token: operator }),
    ]
    const attempts = answers[4]!.body.data as { signed_with: string[] }[]
    expect(attempts[0]!.signed_with).toHaveLength(2)
    for (const answer of answers) {
      expect(answer.status).toBeLessThan(300)
      for (const leak of [...forms(first), ...forms(second)])
        expect(answer.text).not.toContain(leak)
    }

    const tables = (
      await sql<{ name: string }>`
        select table_name as name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'
      `.execute(h.db)
    ).rows.map((r) => r.name)
    expect(tables).toEqual(
      expect.arrayContaining([
        'ledger',
        'endpoints',
        'delivery_origins',
        'delivery_states',
        'events',
        'api_tokens',
        'embeds',
        'access_codes',
      ]),
    )
    let dumped = 0
    for (const table of tables) {
      const rows = (
        await sql<{ row: string }>`select x::text as row from ${sql.table(table)} x`.execute(h.db)
      ).rows
      const text = rows.map((r) => r.row).join('\n')
      dumped += rows.length
      for (const leak of [...forms(first), ...forms(second)])
        expect(text, `${table} holds a secret`).not.toContain(leak)
    }
    expect(dumped).toBeGreaterThan(10)
    // …yet the sealed secrets are there, and the worker could sign with them.
    const row = await sql<{
      sealed: Uint8Array
    }>`select secret_sealed as sealed from endpoints`.execute(h.db)
    expect(h.secretBox.open(row.rows[0]!.sealed)).toBe(second)
  })
})
