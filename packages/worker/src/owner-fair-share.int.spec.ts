/**
 * Fair share across owners (issue 24 item 1) against the real claim and the real dispatcher: an
 * owner flooding many endpoints does not decide another owner's latency; a suspended owner's
 * deliveries wait (nothing lost) and go after resume; `max_in_flight` and `weight` hold.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { generateWebhookSecret, secretKeyId } from '@hookledger/core'
import { createEventCatalog } from '@hookledger/core'
import { deliveryClaim, endpointCreate, eventInsert, fanoutRun, ownerLimitsSet, ownerResume, ownerSuspend } from '@hookledger/store'
import { engineHarness, eventually, type EngineHarness } from '@hookledger/testkit'

let harness: EngineHarness | null = null
afterEach(async () => {
  await harness?.close()
  harness = null
})

/** Endpoints and events of any owner, through the store's one writer (the harness has one owner). */
function owners(h: EngineHarness) {
  let seq = 0
  const ctx = (owner: string) => ({ owner_id: owner, now: h.clock.now(), actor: `owner:${owner}` })
  return {
    async endpoint(owner: string, path = `/${owner}`) {
      const secret = generateWebhookSecret()
      return h.db.transaction().execute((trx) =>
        endpointCreate(trx, ctx(owner), {
          url: h.receiver.url() + path,
          description: '',
          event_types: ['*'],
          embed_id: null,
          secret_sealed: h.secretBox.seal(secret),
          secret_key_id: secretKeyId(secret),
          signature_scheme: 'v1',
          v1a_key: null,
        }),
      )
    },
    async publish(owner: string, count = 1) {
      for (let i = 0; i < count; i++) {
        const id = `evt_${owner}_${++seq}`
        await h.db.transaction().execute((trx) =>
          eventInsert(trx, { owner_id: owner, event: { id, type: 'booking.created', subject: `booking://${seq}`, occurred_at: h.clock.now(), data: {} }, now: h.clock.now(), actor: 'system' }),
        )
      }
    },
    operator: { now: h.clock.now(), actor: 'operator:test' },
  }
}

const ownerOf = (c: { endpoint: { owner_id: string } }) => c.endpoint.owner_id

/** An owner of three endpoints with one event waiting, beside two owners of one endpoint each. */
async function wideBesideCheap(h: EngineHarness) {
  const o = owners(h)
  for (let i = 0; i < 3; i++) await o.endpoint('wide')
  await o.endpoint('q1')
  await o.endpoint('q2')
  await o.publish('wide')
  return o
}

/** One fan-out batch of at most `limit` events. */
const fanBatch = (h: EngineHarness, limit: number, agedFirst?: boolean) =>
  fanoutRun(h.db, { now: h.clock.now(), catalog: createEventCatalog(), embedAdmits: async () => false, actor: 'worker:t', limit, ...(agedFirst !== undefined ? { agedFirst } : {}) })
const claim = (h: EngineHarness, limit: number, inFlight?: Record<string, number>) =>
  deliveryClaim(h.db, { now: h.clock.now(), limit, actor: 'worker:t', ...(inFlight ? { sharesOf: (owners: readonly { owner_id: string }[]) => new Map(owners.map((o) => [o.owner_id, { inFlight: inFlight[o.owner_id] ?? 0 }])) } : {}) })

describe('the claim serves owners in turn', () => {
  it('a quiet owner is not queued behind a flood of older heads, nor behind slots the flood holds', async () => {
    const h = (harness = await engineHarness())
    const o = owners(h)
    for (let i = 0; i < 8; i++) await o.endpoint('flood')
    await o.publish('flood', 3)
    h.clock.advance(60_000) // the flood's heads are a minute older
    await o.endpoint('quiet')
    await o.publish('quiet')
    await h.dispatcher.fanoutOnce()

    const two = await claim(h, 2)
    expect(two.claimed.map(ownerOf).sort()).toEqual(['flood', 'quiet'])
    expect(two.ownersWaiting.map((w) => w.owner_id)).toEqual(['flood'])
    // The flood now holds slots in this worker: the one free slot goes to the quiet owner.
    await o.publish('quiet')
    await o.endpoint('quiet')
    await h.dispatcher.fanoutOnce()
    const one = await claim(h, 1, { flood: 5 })
    expect(one.claimed.map(ownerOf)).toEqual(['quiet'])
  })

  it('weight 3 takes three slots to one; max_in_flight caps the endpoints an owner leases at once', async () => {
    const h = (harness = await engineHarness())
    const o = owners(h)
    for (let i = 0; i < 6; i++) await o.endpoint('heavy')
    for (let i = 0; i < 6; i++) await o.endpoint('light')
    await o.publish('heavy')
    await o.publish('light')
    await h.dispatcher.fanoutOnce()
    await ownerLimitsSet(h.db, 'heavy', o.operator, { weight: 3 })
    const four = await claim(h, 4)
    expect(four.claimed.map(ownerOf).sort()).toEqual(['heavy', 'heavy', 'heavy', 'light'])

    await ownerLimitsSet(h.db, 'light', o.operator, { max_in_flight: 2 })
    const rest = await claim(h, 20)
    // light already leases one endpoint: one more, then it waits; heavy takes the rest of its own.
    expect(rest.claimed.map(ownerOf).sort()).toEqual(['heavy', 'heavy', 'heavy', 'light'])
    expect(await claim(h, 20)).toMatchObject({ claimed: [] })
  })

  it('a suspended owner gets no slot and loses nothing: after resume its deliveries go', async () => {
    const h = (harness = await engineHarness())
    const o = owners(h)
    await o.endpoint('paused')
    await o.endpoint('other')
    await o.publish('paused', 2)
    await o.publish('other')
    await h.dispatcher.fanoutOnce()
    await ownerSuspend(h.db, 'paused', o.operator, 'abuse report 42')
    const during = await claim(h, 10)
    expect(during.claimed.map(ownerOf)).toEqual(['other'])
    h.clock.advance(3_600_000)
    expect(await claim(h, 10)).toMatchObject({ claimed: [] })
    const waiting = await h.db.selectFrom('deliveries').select(['state', 'attempts']).where('owner_id', '=', 'paused').execute()
    expect(waiting).toEqual([{ state: 'pending', attempts: 0 }, { state: 'pending', attempts: 0 }])

    await ownerResume(h.db, 'paused', o.operator)
    const after = await claim(h, 10)
    expect(after.claimed.map(ownerOf)).toEqual(['paused'])
    expect((await h.replay()).differences).toEqual([])
  })
})

describe('the fan-out serves owners in turn', () => {
  it('an owner\'s one new event is fanned out in the next batch, not behind another owner\'s older thousands', async () => {
    const h = (harness = await engineHarness())
    const o = owners(h)
    await o.endpoint('flood')
    await o.endpoint('quiet')
    await o.publish('flood', 60)
    h.clock.advance(1_000)
    await o.publish('quiet')
    const fan = (limit: number) => fanBatch(h, limit)
    const first = await fan(10)
    expect(first).toMatchObject({ events: 10, more: true })
    const quiet = await h.db.selectFrom('events').select('fanned_out_at').where('owner_id', '=', 'quiet').executeTakeFirstOrThrow()
    expect(quiet.fanned_out_at).not.toBeNull()
    // The rest go, batch by batch, until none is left.
    let batches = 1
    while ((await fan(10)).more) batches++
    expect(batches).toBeLessThanOrEqual(7)
    expect(await h.db.selectFrom('events').select('id').where('fanned_out_at', 'is', null).execute()).toEqual([])
    expect((await h.replay()).differences).toEqual([])
  })

  it('an event to many endpoints is not held back for ever by cheaper ones: once the oldest has waited 2 s, the next batch takes it', async () => {
    const h = (harness = await engineHarness())
    const o = await wideBesideCheap(h)
    const fan = (limit: number) => fanBatch(h, limit)
    const wideFannedOut = async () => (await h.db.selectFrom('events').select('fanned_out_at').where('owner_id', '=', 'wide').executeTakeFirstOrThrow()).fanned_out_at !== null
    // Two cheaper events wait at every batch of two: by cost alone, the wide one never goes.
    for (let second = 0; second < 4; second++) {
      await o.publish('q1')
      await o.publish('q2')
      await fan(2)
      expect(await wideFannedOut(), `after ${second} s`).toBe(second >= 2)
      h.clock.advance(1_000)
    }
    expect((await h.replay()).differences).toEqual([])
  })

  it('the aged event goes in a batch of its own, never with cheap events that would wait for it; the batch after goes by cost', async () => {
    const h = (harness = await engineHarness())
    const o = await wideBesideCheap(h)
    h.clock.advance(2_000)
    await o.publish('q1')
    await o.publish('q2')
    const fan = (agedFirst?: boolean) => fanBatch(h, 2, agedFirst)
    const fannedOut = async () =>
      (await h.db.selectFrom('events').select('owner_id').where('fanned_out_at', 'is not', null).orderBy('owner_id').execute()).map((e) => e.owner_id)
    // By cost the two cheap events fill the batch of two; the aged wide one is the batch alone.
    const aged = await fan()
    expect({ events: aged.events, agedAlone: aged.agedAlone, more: aged.more }).toEqual({ events: 1, agedAlone: true, more: true })
    expect(await fannedOut()).toEqual(['wide'])
    // The next batch (the caller alternates) goes by cost.
    const byCost = await fan(false)
    expect({ events: byCost.events, agedAlone: byCost.agedAlone }).toEqual({ events: 2, agedAlone: false })
    expect(await fannedOut()).toEqual(['q1', 'q2', 'wide'])
    expect((await h.replay()).differences).toEqual([])
  })

  it('the dispatcher alternates: an aged event its own transaction, then the cheap ones, then the next aged one', async () => {
    const h = (harness = await engineHarness())
    const o = owners(h)
    for (let i = 0; i < 1_001; i++) await o.endpoint('wide') // each of its events is over the batch's cap alone
    await o.endpoint('quiet')
    await o.publish('wide', 2)
    h.clock.advance(2_000)
    await o.publish('quiet', 3)
    await h.dispatcher.fanoutOnce()
    // Each fan-out transaction's decisions, in commit order: which owners each carried.
    const batches = (
      await h.db
        .selectFrom('ledger')
        .select(['tx_id', 'owner_id'])
        .where('kind', '=', 'fanout.decided')
        .orderBy('position')
        .execute()
    ).reduce<{ tx: string; owners: string[] }[]>((out, r) => {
      const last = out[out.length - 1]
      if (last && last.tx === String(r.tx_id)) last.owners.push(r.owner_id)
      else out.push({ tx: String(r.tx_id), owners: [r.owner_id] })
      return out
    }, [])
    expect(batches.map((b) => b.owners)).toEqual([['wide'], ['quiet', 'quiet', 'quiet'], ['wide']])
  }, 60_000)
})

describe('the running dispatcher gives slots back while an owner waits below its share', () => {
  it('a flood holding every slot with long turns: the quiet owner is sent next, not after the flood drains', async () => {
    // Two slots; the flood's endpoints answer in 150 ms and each has a queue, so without fair
    // share each holds its slot for its whole queue (the pipelined lease).
    const h = (harness = await engineHarness({ concurrency: 2, reply: (req) => ({ status: 204, delayMs: req.path.includes('/flood/') ? 150 : 0 }) }))
    const o = owners(h)
    for (let i = 0; i < 2; i++) await o.endpoint('flood', `/flood/${i}`)
    await o.endpoint('quiet', '/quiet')
    await o.publish('flood', 12)
    await h.dispatcher.start()
    await eventually('both slots taken by the flood', () => h.receiver.requests.length >= 2 && h.dispatcher.inflight === 2)
    await o.publish('quiet')
    h.dispatcher.nudge() // what the event's NOTIFY does in `serve`
    await eventually('the quiet owner to be sent', () => h.receiver.requests.some((r) => r.path.endsWith('/quiet')), { timeoutMs: 10_000 })
    const floodBefore = h.receiver.requests.findIndex((r) => r.path.endsWith('/quiet'))
    // At most two more flood requests per slot went out before the quiet one (the answer each
    // slot was waiting for, and a send pipelined with it); the flood had 24 in its queues.
    expect(floodBefore).toBeLessThanOrEqual(2 + 2 * 2)
    expect(h.receiver.maxConcurrent).toBeLessThanOrEqual(2)
    await eventually('the flood to drain too', () => h.receiver.requests.length === 25, { timeoutMs: 20_000 })
    await h.dispatcher.stop()
    expect((await h.replay()).differences).toEqual([])
  })
})

describe('endpoints take turns when more are ready than slots', () => {
  it.each([
    ['fanned out a millisecond apart, as a stream is', true],
    // Every endpoint's ready time then ties: the endpoints that gave way are claimed after the
    // others, in the order they gave way, not by id (core fairShareOrder's `yielded`).
    ['fanned out at one instant', false],
  ])('one owner, four endpoints with queues, two slots, turns of 8: every endpoint is served long before the first two drain (%s)', async (_, stream) => {
    const share = 8
    const h = (harness = await engineHarness({ concurrency: 2, turnShare: share }))
    const o = owners(h)
    for (let i = 0; i < 4; i++) await o.endpoint('one', `/one/${i}`)
    for (let i = 0; i < 40; i++) {
      await o.publish('one', 1)
      if (!stream) continue
      await h.dispatcher.fanoutOnce()
      h.clock.advance(1)
    }
    await h.dispatcher.start()
    await eventually('all 160 sent', () => h.receiver.requests.length === 160, { timeoutMs: 30_000 })
    await h.dispatcher.stop()
    const firstOf = (i: number) => h.receiver.requests.findIndex((r) => r.path.endsWith(`/one/${i}`))
    // Without turns the last two endpoints would wait for the first two's 80; with them each
    // turn gives its slot up after its share (and the send pipelined with its last one).
    for (let i = 0; i < 4; i++) expect(firstOf(i), `endpoint ${i}'s first request`).toBeLessThanOrEqual(2 * (share + 2))
    expect(h.receiver.maxConcurrent).toBeLessThanOrEqual(2)
    expect((await h.replay()).differences).toEqual([])
  })
})
