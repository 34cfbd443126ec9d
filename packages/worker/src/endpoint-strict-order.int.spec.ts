/**
 * Strict ordering per endpoint (issue 22 item 5) against the real claim, settle and transport:
 * an endpoint with `ordering: strict` receives its deliveries by the event's occurred_at (then
 * id), whatever order they were published in; a failing head holds back the rest (their
 * waiting_reason names it) across its retries; a redelivered earlier delivery goes before later
 * ones again; the pipelined running dispatcher keeps the order; replay is clean.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { sql } from 'kysely'
import { waitingReason } from '@hookledger/core'
import { deliveryRedeliver, endpointQueueDrift, endpointUpdate, waitingFacts } from '@hookledger/store'
import { adminDbOf, engineHarness, eventually, type EngineHarness } from '@hookledger/testkit'

let harness: EngineHarness | null = null
afterEach(async () => {
  await harness?.close()
  harness = null
})

const T0 = Date.parse('2026-01-01T00:00:00Z')
const occurred = (s: number) => new Date(T0 - 60_000 + s * 1000)
const ids = (h: EngineHarness) => h.receiver.requests.map((r) => r.headers['webhook-id'] as string)

async function strictEndpoint(h: EngineHarness) {
  const { endpoint } = await h.createEndpoint()
  await h.db.transaction().execute((trx) => endpointUpdate(trx, { owner_id: h.owner, now: h.clock.now(), actor: 'owner:test' }, endpoint.id, { ordering: 'strict' }))
  return endpoint
}

async function waitingOf(h: EngineHarness, eventId: string) {
  const d = await h.deliveryOf(eventId)
  const facts = await waitingFacts(h.db, h.owner, [d])
  return waitingReason(d, facts.scheduledBy.get(d.id) ?? null, facts.endpoints.get(d.endpoint_id) ?? null, h.clock.now(), facts.blockedBy.get(d.id) ?? null)
}

const noDrift = async (h: EngineHarness) => expect((await h.db.transaction().execute((trx) => endpointQueueDrift(trx, 10))).total).toBe(0)

describe('an endpoint with ordering: strict', () => {
  it('sends by occurred_at whatever the publish order; a failing head holds the rest back across its retries', async () => {
    const h = (harness = await engineHarness({ start: new Date(T0).toISOString(), reply: (req, i) => ({ status: req.headers['webhook-id'] === 'evt_1' && i === 0 ? 500 : 204 }) }))
    const endpoint = await strictEndpoint(h)
    // Published newest first: the line is by occurred_at, not by publication.
    await h.publish({ id: 'evt_3', occurred_at: occurred(3) })
    await h.publish({ id: 'evt_2', occurred_at: occurred(2) })
    await h.publish({ id: 'evt_1', occurred_at: occurred(1) })

    await h.step() // evt_1 first, and it fails: retryable, backoff 5 s
    expect(ids(h)).toEqual(['evt_1'])
    expect((await h.deliveryOf('evt_1')).state).toBe('retryable')
    const head = (await h.deliveryOf('evt_1')).id
    expect(await waitingOf(h, 'evt_2')).toEqual({ kind: 'ordering', until: null, blocked_by: head })
    expect(await waitingOf(h, 'evt_3')).toEqual({ kind: 'ordering', until: null, blocked_by: head })
    // The endpoint is not even ready until its head's backoff ends.
    const q = await h.db.selectFrom('endpoint_queue').select('ready_at').where('endpoint_id', '=', endpoint.id).executeTakeFirstOrThrow()
    expect(q.ready_at).toEqual((await h.deliveryOf('evt_1')).next_attempt_at)
    await noDrift(h)
    expect(await h.step()).toMatchObject({ claimed: 0 })

    h.clock.advance(5_000)
    for (let i = 0; i < 3; i++) await h.step()
    expect(ids(h)).toEqual(['evt_1', 'evt_1', 'evt_2', 'evt_3'])
    for (const id of ['evt_1', 'evt_2', 'evt_3']) expect((await h.deliveryOf(id)).state).toBe('completed')
    await noDrift(h)
    expect((await h.replay()).differences).toEqual([])
  })

  it('a line made strict with deliveries waiting is claimed in its strict order, beside an endpoint that is not strict', async () => {
    const h = (harness = await engineHarness({ start: new Date(T0).toISOString() }))
    // The claim reads an endpoint's ordering with its candidates and leaves the strict line out of
    // its heads statement when none is strict: both kinds in one claim, and one switched late.
    const { endpoint: plain } = await h.createEndpoint({ url: h.receiver.url('/plain') })
    const { endpoint } = await h.createEndpoint({ url: h.receiver.url('/strict') })
    await h.publish({ id: 'evt_3', occurred_at: occurred(3) })
    await h.publish({ id: 'evt_2', occurred_at: occurred(2) })
    await h.publish({ id: 'evt_1', occurred_at: occurred(1) })
    await h.dispatcher.fanoutOnce()
    await h.db.transaction().execute((trx) => endpointUpdate(trx, { owner_id: h.owner, now: h.clock.now(), actor: 'owner:test' }, endpoint.id, { ordering: 'strict' }))
    for (let i = 0; i < 3; i++) await h.step()
    const to = (path: string) => h.receiver.requests.filter((r) => r.path === path).map((r) => r.headers['webhook-id'])
    expect(to('/strict')).toEqual(['evt_1', 'evt_2', 'evt_3'])
    expect([...to('/plain')].sort()).toEqual(['evt_1', 'evt_2', 'evt_3'])
    expect(plain.ordering).toBe('none')
    await noDrift(h)
    expect((await h.replay()).differences).toEqual([])
  })

  it('a redelivered earlier delivery goes before the later ones still waiting', async () => {
    const h = (harness = await engineHarness({ start: new Date(T0).toISOString() }))
    await strictEndpoint(h)
    await h.publish({ id: 'evt_1', occurred_at: occurred(1) })
    await h.step()
    await h.publish({ id: 'evt_2', occurred_at: occurred(2) })
    await h.publish({ id: 'evt_3', occurred_at: occurred(3) })
    await h.dispatcher.fanoutOnce()
    const first = await h.deliveryOf('evt_1')
    await h.db.transaction().execute((trx) => deliveryRedeliver(trx, { owner_id: h.owner, now: h.clock.now(), actor: 'owner:test' }, first.id))
    for (let i = 0; i < 3; i++) await h.step()
    expect(ids(h)).toEqual(['evt_1', 'evt_1', 'evt_2', 'evt_3'])
    expect((await h.replay()).differences).toEqual([])
  })

  it('a later event fanned out while an earlier one is still being fanned out (another worker holds it) waits for it', async () => {
    const h = (harness = await engineHarness({ start: new Date(T0).toISOString() }))
    await strictEndpoint(h)
    await h.publish({ id: 'evt_1', occurred_at: occurred(1) })
    await h.publish({ id: 'evt_2', occurred_at: occurred(2) })
    // Another worker's fan-out has locked evt_1 and not committed: this one's skip-locked batch
    // takes evt_2 alone. (As two fan-outs split one publish batch: the fault test saw evt_00027
    // delivered before evt_00000.)
    let release!: () => void
    let locked!: () => void
    const isLocked = new Promise<void>((r) => (locked = r))
    const held = adminDbOf(h.db).transaction().execute(async (trx) => {
      await sql`select id from events where id = 'evt_1' for update`.execute(trx)
      locked()
      await new Promise<void>((r) => (release = r))
    })
    await isLocked
    try {
      expect(await h.step()).toMatchObject({ fannedOut: 1, claimed: 0 })
      expect(ids(h)).toEqual([])
    } finally {
      release()
      await held
    }
    for (let i = 0; i < 3; i++) await h.step()
    expect(ids(h)).toEqual(['evt_1', 'evt_2'])
    await noDrift(h)
    expect((await h.replay()).differences).toEqual([])
  })

  it('the running dispatcher, pipelining: every delivery in order, the failing one retried before the rest', async () => {
    const h = (harness = await engineHarness({ start: new Date(T0).toISOString(), reply: (req) => ({ status: req.headers['webhook-id'] === 'evt_04' && !failedOnce++ ? 503 : 204 }) }))
    let failedOnce = 0
    await strictEndpoint(h)
    const events = Array.from({ length: 12 }, (_, i) => `evt_${String(i + 1).padStart(2, '0')}`)
    for (const [i, id] of [...events.entries()].reverse()) await h.publish({ id, occurred_at: occurred(i) })
    await h.dispatcher.start()
    await eventually('the head evt_04 to fail', async () => (await h.db.selectFrom('deliveries').select('state').where('event_id', '=', 'evt_04').executeTakeFirst())?.state === 'retryable')
    expect((await waitingOf(h, 'evt_05'))?.kind).toBe('ordering')
    expect(ids(h)).toEqual(['evt_01', 'evt_02', 'evt_03', 'evt_04'])
    h.clock.advance(5_000)
    h.dispatcher.nudge()
    await eventually('all twelve completed', async () => (await h.db.selectFrom('deliveries').select('id').where('state', '=', 'completed').execute()).length === 12)
    await h.dispatcher.stop()
    expect(ids(h)).toEqual([...events.slice(0, 4), ...events.slice(3)])
    expect(h.receiver.maxConcurrent).toBe(1)
    await noDrift(h)
    expect((await h.replay()).differences).toEqual([])
  })
})
