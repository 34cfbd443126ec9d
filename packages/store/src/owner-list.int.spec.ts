/**
 * owners.list a page at a time (ownersPage): every owner known by any of its traces — a row of
 * its own, a token, a live or deleted endpoint, a delivery — once, in id order, across pages of
 * any size; never the operators' '*'; a cursor not ours is refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateWebhookSecret, secretKeyId } from '@hookledger/core'
import { engineHarness, type EngineHarness } from '@hookledger/testkit'
import { apiTokenCreate } from './access/api-tokens.js'
import { endpointCreate, endpointDelete } from './endpoint-commands.js'
import { ownerLimitsSet, ownersPage, ownersWithUsage } from './owner-commands.js'
import { InvalidCursorError } from './read-models.js'

let h: EngineHarness

async function endpointOf(owner: string): Promise<string> {
  const secret = generateWebhookSecret()
  const row = await h.db.transaction().execute((trx) =>
    endpointCreate(trx, { owner_id: owner, now: h.clock.now(), actor: 'owner:test' }, {
      url: h.receiver.url(), description: '', event_types: ['*'], embed_id: null,
      secret_sealed: h.secretBox.seal(secret), secret_key_id: secretKeyId(secret),
    }),
  )
  return row.id
}

beforeAll(async () => {
  h = await engineHarness({ start: '2026-03-01T00:00:00Z', reply: { status: 204 } })
  // The harness's owner: endpoints and deliveries.
  await h.createEndpoint()
  await h.publish()
  await h.dispatcher.fanoutOnce()
  await ownerLimitsSet(h.db, 'a-limits-only', { now: h.clock.now(), actor: 'operator:test' }, { weight: 2 })
  await apiTokenCreate(h.db, { owner_id: 'b-token-only', scopes: ['admin'], now: h.clock.now() })
  await apiTokenCreate(h.db, { owner_id: '*', scopes: ['operator'], now: h.clock.now() })
  const gone = await endpointOf('c-deleted-endpoint')
  await h.db.transaction().execute((trx) => endpointDelete(trx, { owner_id: 'c-deleted-endpoint', now: h.clock.now(), actor: 'owner:test' }, gone))
  for (const o of ['d-live', 'e-live', 'f-live']) await endpointOf(o)
})
afterAll(async () => {
  await h?.close()
})

const known = ['a-limits-only', 'b-token-only', 'c-deleted-endpoint', 'd-live', 'e-live', 'f-live']

describe('ownersPage', () => {
  it('one page holds every owner known, once, in id order, never *', async () => {
    const page = await ownersPage(h.db, h.clock.now(), { limit: 200 })
    const ids = page.data.map((o) => o.owner.id)
    expect(new Set(ids)).toEqual(new Set([...known, h.owner]))
    expect(ids).toHaveLength(known.length + 1)
    expect(page.next_cursor).toBeNull()
    expect(page.data.find((o) => o.owner.id === 'a-limits-only')!.owner.weight).toBe(2)
    expect(page.data.find((o) => o.owner.id === h.owner)!.usage).toMatchObject({ endpoints: 1, deliveries_24h: 1 })
    expect(page.data.find((o) => o.owner.id === 'c-deleted-endpoint')!.usage.endpoints).toBe(0)
  })

  it.each([1, 2, 3, 6])('pages of %i follow each other to the same list, the last without a cursor', async (limit) => {
    const all = (await ownersPage(h.db, h.clock.now(), { limit: 200 })).data.map((o) => o.owner.id)
    const seen: string[] = []
    let cursor: string | undefined
    for (let pages = 0; pages < 20; pages++) {
      const page = await ownersPage(h.db, h.clock.now(), { limit, ...(cursor === undefined ? {} : { cursor }) })
      expect(page.data.length).toBeLessThanOrEqual(limit)
      seen.push(...page.data.map((o) => o.owner.id))
      if (page.next_cursor === null) break
      cursor = page.next_cursor
    }
    expect(seen).toEqual(all)
  })

  it('a cursor not ours is refused; an id nobody knows has no usage', async () => {
    await expect(ownersPage(h.db, h.clock.now(), { limit: 2, cursor: 'bm9wZQ' })).rejects.toBeInstanceOf(InvalidCursorError)
    await expect(ownersPage(h.db, h.clock.now(), { limit: 2, cursor: Buffer.from('["2026-01-01T00:00:00Z","x"]').toString('base64url') })).rejects.toBeInstanceOf(InvalidCursorError)
    expect(await ownersWithUsage(h.db, h.clock.now(), ['nobody', '*'])).toEqual([])
    expect((await ownersWithUsage(h.db, h.clock.now(), ['b-token-only'])).map((o) => o.owner.id)).toEqual(['b-token-only'])
  })
})
