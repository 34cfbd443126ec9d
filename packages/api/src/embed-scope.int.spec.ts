import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createTableEmbedAdmits, type EmbedAdmits } from '@hookledger/store'
import { engineHarness, type EngineHarness, testApi, type TestApi } from '@hookledger/testkit'
import { sql } from 'kysely'

/**
 * SPEC §4 scope, end to end: publish → fan-out (with the shipped table-backed embed port) →
 * delivery to a real receiver. Access codes and embeds are managed through the owner ops.
 */
let h: EngineHarness
let api: TestApi
let admin: string
let portCalls: { embedId: string; eventId: string }[]

beforeEach(async () => {
  let port: EmbedAdmits | null = null
  portCalls = []
  h = await engineHarness({
    embedAdmits: (embedId, event, now) => {
      portCalls.push({ embedId, eventId: event.id })
      return port!(embedId, event, now)
    },
  })
  port = createTableEmbedAdmits(h.db)
  api = testApi(h.db, { clock: h.clock, secretBox: h.secretBox })
  admin = await api.token(h.owner, ['admin'])
})
afterEach(() => h.close())

const note = (
  subject: string,
  flags: { published?: boolean; was_published?: boolean } = { published: true },
) => ({
  type: 'corpus.note.changed',
  subject,
  data: { op: 'updated', note_id: 'n', ...flags },
})

/** Which receiver paths got which event ids. */
const deliveredTo = (path: string) =>
  h.receiver.requests.filter((r) => r.path === path).map((r) => r.headers['webhook-id'])

async function publishAndDeliver(
  event:
    ReturnType<typeof note> | { type: string; subject: string; data?: Record<string, unknown> },
) {
  const e = await h.publish(event)
  await h.step()
  await h.step()
  return e.id
}

async function fanoutDecision(eventId: string) {
  const rows = await sql<{
    payload: { matched: string[]; denied: { endpoint_id: string; reason: string }[] }
  }>`
    select payload from ledger where kind = 'fanout.decided' and event_id = ${eventId}
  `.execute(h.db)
  return rows.rows[0]!.payload
}

async function putCode(id: string, body: Record<string, unknown>) {
  const res = await api.call('PUT', `/api/admin/access_codes/${id}`, { token: admin, body })
  expect(res.status, res.text).toBeLessThan(300)
}
async function putEmbed(id: string, access_code_id: string) {
  const res = await api.call('PUT', `/api/admin/embeds/${id}`, {
    token: admin,
    body: { access_code_id },
  })
  expect(res.status, res.text).toBeLessThan(300)
}

describe('raw subjects', () => {
  it('a raw:// subject is never delivered to anyone, whatever the type, flags or embed scope', async () => {
    await putCode('all', { role_globs: ['**'], reads_published_slice: false })
    await putEmbed('site', 'all')
    const standalone = await h.createEndpoint({
      url: h.receiver.url('/standalone'),
      event_types: ['*'],
    })
    const embedded = await h.createEndpoint({
      url: h.receiver.url('/embed'),
      event_types: ['*'],
      embed_id: 'site',
    })

    const a = await publishAndDeliver(
      note('raw://inbox/1', { published: true, was_published: true }),
    )
    const b = await publishAndDeliver({ type: 'booking.created', subject: 'RAW://bookings/2' })
    const c = await publishAndDeliver(note('  raw://x'))
    expect(h.receiver.requests).toHaveLength(0)
    for (const id of [a, b, c]) {
      const decision = await fanoutDecision(id)
      expect(decision.matched).toEqual([])
      // Endpoints created at the same fake instant come in id order: compare as a set.
      expect(decision.denied).toHaveLength(2)
      expect(decision.denied).toEqual(
        expect.arrayContaining([
          { endpoint_id: standalone.endpoint.id, reason: 'raw_subject' },
          { endpoint_id: embedded.endpoint.id, reason: 'raw_subject' },
        ]),
      )
    }
    // The port is not even asked about raw subjects.
    expect(portCalls).toEqual([])
  })
})

describe('standalone endpoints see the published slice', () => {
  it('unpublished-and-never-published is not delivered; publishing and un-publishing are', async () => {
    const ep = await h.createEndpoint({
      url: h.receiver.url('/standalone'),
      event_types: ['corpus.**'],
    })
    const hidden = await publishAndDeliver(
      note('wiki://drafts/1', { published: false, was_published: false }),
    )
    const noFlags = await publishAndDeliver(note('wiki://drafts/2', {}))
    const stringly = await publishAndDeliver({
      type: 'corpus.note.changed',
      subject: 'wiki://drafts/3',
      data: { published: 'true' },
    })
    const published = await publishAndDeliver(
      note('wiki://notes/1', { published: true, was_published: false }),
    )
    const unpublished = await publishAndDeliver(
      note('wiki://notes/1', { published: false, was_published: true }),
    )
    expect(deliveredTo('/standalone')).toEqual([published, unpublished])
    for (const id of [hidden, noFlags, stringly]) {
      expect((await fanoutDecision(id)).denied).toEqual([
        { endpoint_id: ep.endpoint.id, reason: 'unpublished' },
      ])
    }
  })
})

describe('embed endpoints ask the table-backed port, once per event', () => {
  it('admitted by a role glob, refused by a deny glob or outside the role; unpublished only when the role reads the published slice', async () => {
    await putCode('docs', {
      role_globs: ['wiki://software/**'],
      deny_globs: ['wiki://software/secret/**'],
      reads_published_slice: false,
    })
    await putCode('public', { role_globs: ['wiki://**'], reads_published_slice: true })
    await putEmbed('docs-site', 'docs')
    await putEmbed('public-site', 'public')
    await h.createEndpoint({
      url: h.receiver.url('/docs'),
      event_types: ['corpus.note.changed'],
      embed_id: 'docs-site',
    })
    await h.createEndpoint({
      url: h.receiver.url('/public'),
      event_types: ['corpus.note.changed'],
      embed_id: 'public-site',
    })

    const inRole = await publishAndDeliver(note('wiki://software/project/a', { published: false }))
    const denied = await publishAndDeliver(note('wiki://software/secret/keys', { published: true }))
    const outside = await publishAndDeliver(note('wiki://private/diary', { published: true }))
    const dotted = await publishAndDeliver(
      note('wiki://software/../private/diary', { published: true }),
    )

    expect(deliveredTo('/docs')).toEqual([inRole])
    // The published-slice role: only published notes, but anywhere in wiki://.
    expect(deliveredTo('/public')).toEqual([denied, outside])
    for (const id of [denied, outside, dotted]) {
      expect((await fanoutDecision(id)).denied.map((d) => d.reason)).toContain('embed_denied')
    }
    // Asked once per (event, embed endpoint), never cached: 4 events × 2 endpoints.
    expect(portCalls).toHaveLength(8)
    expect(new Set(portCalls.map((c) => `${c.embedId}/${c.eventId}`)).size).toBe(8)
  })

  it('decides per event: a revocation, an expiry, a re-scope or a deleted embed changes the next outcome', async () => {
    await putCode('c', { role_globs: ['wiki://**'], reads_published_slice: false })
    await putEmbed('site', 'c')
    await h.createEndpoint({
      url: h.receiver.url('/embed'),
      event_types: ['corpus.note.changed'],
      embed_id: 'site',
    })
    const subject = 'wiki://software/project/a'

    // Revoked between two events.
    const before = await publishAndDeliver(note(subject))
    expect(
      (await api.call('POST', '/api/admin/access_codes/c/revoke', { token: admin })).status,
    ).toBe(200)
    const afterRevoke = await publishAndDeliver(note(subject))
    expect(deliveredTo('/embed')).toEqual([before])
    expect((await fanoutDecision(afterRevoke)).denied).toHaveLength(1)
    // Revocation is final: a put cannot bring the code back.
    const again = await api.call('PUT', '/api/admin/access_codes/c', {
      token: admin,
      body: { role_globs: ['wiki://**'] },
    })
    expect(again.status).toBe(409)
    expect(again.body.code).toBe('access_code_revoked')

    // Expired: admitted before the expiry, refused from it on (the fake clock moves).
    await putCode('c2', {
      role_globs: ['wiki://**'],
      reads_published_slice: false,
      expires_at: new Date(h.clock.now().getTime() + 3_600_000).toISOString(),
    })
    await putEmbed('site', 'c2')
    const beforeExpiry = await publishAndDeliver(note(subject))
    h.clock.advance(3_600_000)
    const atExpiry = await publishAndDeliver(note(subject))
    expect(deliveredTo('/embed')).toEqual([before, beforeExpiry])
    expect((await fanoutDecision(atExpiry)).matched).toEqual([])

    // Re-scoped: a new deny glob applies to the next event.
    await putCode('c3', { role_globs: ['wiki://**'], reads_published_slice: false })
    await putEmbed('site', 'c3')
    const open = await publishAndDeliver(note(subject))
    await putCode('c3', {
      role_globs: ['wiki://**'],
      deny_globs: ['wiki://software/**'],
      reads_published_slice: false,
    })
    const rescoped = await publishAndDeliver(note(subject))
    expect(deliveredTo('/embed')).toEqual([before, beforeExpiry, open])
    expect((await fanoutDecision(rescoped)).matched).toEqual([])

    // Deleted embed: nothing; deleting twice is a 404.
    await putCode('c3', { role_globs: ['wiki://**'], reads_published_slice: false })
    const reopened = await publishAndDeliver(note(subject))
    expect((await api.call('DELETE', '/api/admin/embeds/site', { token: admin })).status).toBe(200)
    const afterDelete = await publishAndDeliver(note(subject))
    expect(deliveredTo('/embed')).toEqual([before, beforeExpiry, open, reopened])
    expect((await fanoutDecision(afterDelete)).matched).toEqual([])
    expect((await api.call('DELETE', '/api/admin/embeds/site', { token: admin })).status).toBe(404)
    expect((await api.call('GET', '/api/admin/embeds/site', { token: admin })).status).toBe(404)

    // Other types are not scoped by the embed: they follow the globs alone.
    const booking = await h.createEndpoint({
      url: h.receiver.url('/embed-bookings'),
      event_types: ['booking.*'],
      embed_id: 'site',
    })
    const b = await publishAndDeliver({ type: 'booking.created', subject: 'booking://1' })
    expect(deliveredTo('/embed-bookings')).toEqual([b])
    expect((await fanoutDecision(b)).matched).toEqual([booking.endpoint.id])

    expect((await h.replay()).differences).toEqual([])
  })

  it('an embed naming an unknown or revoked code is refused at put (422 naming access_code_id)', async () => {
    const unknown = await api.call('PUT', '/api/admin/embeds/e', {
      token: admin,
      body: { access_code_id: 'nope' },
    })
    expect(unknown.status).toBe(422)
    expect(unknown.body).toMatchObject({ code: 'unknown_access_code', field: 'access_code_id' })
    await putCode('gone', { role_globs: ['wiki://**'] })
    await api.call('POST', '/api/admin/access_codes/gone/revoke', { token: admin })
    const revoked = await api.call('PUT', '/api/admin/embeds/e', {
      token: admin,
      body: { access_code_id: 'gone' },
    })
    expect(revoked.status).toBe(422)
    expect(revoked.body).toMatchObject({ code: 'revoked_access_code', field: 'access_code_id' })
  })

  it('an endpoint naming an embed that does not exist gets no corpus notes (fails closed)', async () => {
    await h.createEndpoint({
      url: h.receiver.url('/ghost'),
      event_types: ['corpus.note.changed'],
      embed_id: 'ghost',
    })
    const id = await publishAndDeliver(note('wiki://a', { published: true }))
    expect(deliveredTo('/ghost')).toEqual([])
    expect((await fanoutDecision(id)).denied.map((d) => d.reason)).toEqual(['embed_denied'])
  })
})
