import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { apiTokenCreate, apiTokenRevoke } from '@hookledger/store'
import { testDatabase, type TestDatabase, testApi, type TestApi } from '@hookledger/testkit'

/** Security-relevant changes outside the projections are in the ledger too, with their actor. */
describe('tokens, access codes and embeds are ledgered', () => {
  let database: TestDatabase
  let api: TestApi
  beforeAll(async () => {
    database = await testDatabase()
    api = testApi(database.db)
  })
  afterAll(() => database.close())

  const entries = async (kinds: string[]) =>
    (
      await sql<{ kind: string; owner_id: string; actor: string; payload: Record<string, unknown> }>`
        select kind, owner_id, actor, payload from ledger where kind = any(${kinds}::text[]) order by position
      `.execute(database.db)
    ).rows

  it('token issue and revoke: an entry each, never the token or its hash', async () => {
    const { id, token } = await apiTokenCreate(database.db, { owner_id: 'acme', scopes: ['publish'], label: 'ci', now: new Date(), actor: 'operator' })
    expect(await apiTokenRevoke(database.db, { id, now: new Date(), actor: 'operator' })).toBe(true)
    expect(await apiTokenRevoke(database.db, { id, now: new Date(), actor: 'operator' })).toBe(false)
    const rows = (await entries(['token.issued', 'token.revoked'])).filter((r) => r.payload['token_id'] === id)
    expect(rows).toEqual([
      { kind: 'token.issued', owner_id: 'acme', actor: 'operator', payload: { token_id: id, scopes: ['publish'], label: 'ci' } },
      { kind: 'token.revoked', owner_id: 'acme', actor: 'operator', payload: { token_id: id } },
    ])
    const all = JSON.stringify(await sql<{ payload: Record<string, unknown> }>`select payload from ledger`.execute(database.db))
    expect(all).not.toContain(token)
  })

  it('access code put and revoke, embed put and delete: an entry each, by the owner token that did it', async () => {
    const admin = await api.token('globex', ['admin'])
    const put = (path: string, body: unknown) => api.call('PUT', path, { token: admin, body })
    expect((await put('/api/admin/access_codes/c1', { role_globs: ['**'], deny_globs: [], reads_published_slice: false })).status).toBe(201)
    expect((await put('/api/admin/access_codes/c1', { role_globs: ['notes/**'], deny_globs: [], reads_published_slice: true })).status).toBe(200)
    expect((await put('/api/admin/embeds/site', { access_code_id: 'c1' })).status).toBe(201)
    expect((await api.call('DELETE', '/api/admin/embeds/site', { token: admin })).status).toBe(200)
    expect((await api.call('POST', '/api/admin/access_codes/c1/revoke', { token: admin })).status).toBe(200)
    expect((await api.call('POST', '/api/admin/access_codes/c1/revoke', { token: admin })).status).toBe(200)
    const rows = (await entries(['access_code.put', 'access_code.revoked', 'embed.put', 'embed.deleted'])).filter((r) => r.owner_id === 'globex')
    expect(rows.map((r) => [r.kind, r.payload['created'] ?? null])).toEqual([
      ['access_code.put', true],
      ['access_code.put', false],
      ['embed.put', true],
      ['embed.deleted', null],
      ['access_code.revoked', null],
    ])
    expect(rows[1]!.payload).toMatchObject({ role_globs: ['notes/**'], reads_published_slice: true })
    expect(new Set(rows.map((r) => r.actor)).size).toBe(1)
    expect(rows[0]!.actor).toMatch(/^owner:/)
  })
})
