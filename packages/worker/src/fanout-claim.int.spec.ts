/**
 * The fan-out claims what it enqueued, in its own transaction (store `FanoutParams.claim`): a
 * delivery to an idle endpoint is leased by the transaction that created it, so it does not
 * wait for a producer's pass and a transaction of its own. Its NOTIFY waits for that claim and
 * goes out only for what the claim left, and the claim is durable before anything is sent.
 * Against the real store and a real LISTEN; an absent NOTIFY is shown by a marker sent after
 * the commit (notifications arrive in commit order), never by waiting.
 */
import pg from 'pg'
import { sql } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import { DEFAULT_DB_SCHEMA, createEventCatalog, deliveriesChannel } from '@hookledger/core'
import { claimInTransaction, createDb, fanoutRun, type DeliveryClaimParams } from '@hookledger/store'
import { engineHarness, eventually, type EngineHarness } from '@hookledger/testkit'

let harness: EngineHarness | null = null
let listener: pg.Client | null = null
afterEach(async () => {
  await listener?.end()
  listener = null
  await harness?.close()
  harness = null
})

const CHANNEL = deliveriesChannel(DEFAULT_DB_SCHEMA)

/** The deliveries channel's notifications, read up to a marker this sends after the last commit. */
async function listen(h: EngineHarness): Promise<() => Promise<string[]>> {
  const client = (listener = new pg.Client({ connectionString: h.roleUrl('service') }))
  client.on('error', () => {}) // the teardown's forced drop may end it: not an unhandled error
  await client.connect()
  const seen: string[] = []
  let marker: (() => void) | null = null
  client.on('notification', (n) => (n.payload === 'marker' ? marker?.() : seen.push(n.payload ?? '')))
  await client.query(`listen "${CHANNEL}"`)
  return async () => {
    const arrived = new Promise<void>((resolve) => (marker = resolve))
    await client.query('select pg_notify($1, $2)', [CHANNEL, 'marker'])
    await arrived
    return seen.splice(0)
  }
}

function fanout(h: EngineHarness, claim?: () => Omit<DeliveryClaimParams, 'now' | 'actor'> | null) {
  return fanoutRun(h.db, { now: h.clock.now(), catalog: createEventCatalog(), embedAdmits: async () => false, actor: 'worker:t', ...(claim ? { claim } : {}) })
}

describe('the fan-out claims what it enqueued', () => {
  it('a delivery to an idle endpoint is leased in the transaction that created it, and no producer is woken', async () => {
    const h = (harness = await engineHarness())
    await h.createEndpoint()
    const notifications = await listen(h)
    await h.publish()
    const picked: number[] = []
    const r = await fanout(h, () => ({ limit: 5, picked: (n) => picked.push(n) }))
    expect(r).toMatchObject({ events: 1, enqueued: 1, left: false })
    expect(r.claimed).toHaveLength(1)
    expect(picked).toEqual([1])
    expect(await notifications()).toEqual([])
    const delivery = await h.db.selectFrom('deliveries').select(['id', 'state', 'claimed_by']).executeTakeFirstOrThrow()
    expect(delivery).toMatchObject({ id: r.claimed[0]!.delivery.id, state: 'running', claimed_by: 'worker:t' })
    // One transaction: the decision (which is the enqueue: ledger format 3) and the claim.
    const rows = await h.db.selectFrom('ledger').select(['kind', 'tx_id']).where('kind', 'in', ['fanout.decided', 'delivery.enqueued', 'delivery.claimed']).orderBy('position').execute()
    expect(rows.map((row) => row.kind)).toEqual(['fanout.decided', 'delivery.claimed'])
    expect(new Set(rows.map((row) => row.tx_id)).size).toBe(1)
    expect((await h.replay()).differences).toEqual([])
  })

  it('an endpoint busy with an earlier delivery is left to the producers, who are told', async () => {
    const h = (harness = await engineHarness())
    await h.createEndpoint()
    const notifications = await listen(h)
    await h.publish()
    expect((await fanout(h, () => ({ limit: 5 }))).claimed).toHaveLength(1)
    await h.publish()
    const r = await fanout(h, () => ({ limit: 5 }))
    expect(r).toMatchObject({ enqueued: 1, left: true, claimed: [] })
    expect(await notifications()).toEqual([''])
  })

  it('past its free slots the rest wait for a producer, who is told', async () => {
    const h = (harness = await engineHarness())
    await h.createEndpoint()
    await h.createEndpoint()
    const notifications = await listen(h)
    await h.publish()
    const r = await fanout(h, () => ({ limit: 1 }))
    expect(r).toMatchObject({ enqueued: 2, left: true })
    expect(r.claimed).toHaveLength(1)
    expect(await notifications()).toEqual([''])
  })

  it('with no slot free it enqueues as before, and tells the producers', async () => {
    const h = (harness = await engineHarness())
    await h.createEndpoint()
    const notifications = await listen(h)
    await h.publish()
    const r = await fanout(h, () => null)
    expect(r).toMatchObject({ enqueued: 1, left: true, claimed: [], claim: null })
    expect(await notifications()).toEqual([''])
    expect(await h.db.selectFrom('deliveries').select('state').execute()).toEqual([{ state: 'pending' }])
  })

  it("its claim commits durably: the write restores the session's synchronous_commit the fan-out turned off", async () => {
    const h = (harness = await engineHarness())
    await h.createEndpoint()
    await h.publish()
    await fanout(h)
    // A connection configured as an operator might (the test cluster itself commits with it off).
    const pool = new pg.Pool({ connectionString: h.roleUrl('service'), max: 1, options: '-c synchronous_commit=remote_write' })
    // A pool's end resolves before its socket closes: the teardown's forced drop may still end
    // that connection, which must not surface as an unhandled error (it did once in CI).
    pool.on('error', () => {})
    pool.on('connect', (client) => client.on('error', () => {}))
    const db = createDb(pool)
    try {
      const inside = await db.transaction().execute(async (trx) => {
        await sql`set local synchronous_commit = off`.execute(trx)
        const claim = await claimInTransaction(trx, { now: h.clock.now(), actor: 'worker:t', limit: 5, restoreDurableCommit: true })
        expect(claim.claimed).toHaveLength(1)
        return (await sql<{ v: string }>`select current_setting('synchronous_commit') as v`.execute(trx)).rows[0]!.v
      })
      expect(inside).toBe('remote_write')
    } finally {
      await db.destroy()
    }
  })

  it("in the running worker, its claims and the producer's together never take more than the free slots", async () => {
    // Three slots, eight endpoints answering in 100 ms. Woken by NOTIFY alone (a poll of ten
    // minutes), each event's fan-out finds the producer paused and the three slots free: it
    // claims three; the producer, told of the five it left, finds none free until they answer.
    const h = (harness = await engineHarness({ concurrency: 3, reply: { status: 204, delayMs: 100 }, listen: true, pollIntervalMs: 600_000 }))
    for (let i = 0; i < 8; i++) await h.createEndpoint()
    await h.dispatcher.start()
    const quiet = () => h.dispatcher.inflight === 0 && h.dispatcher.producerPaused
    for (const [n, delivered] of [[1, 8], [2, 16]] as const) {
      await eventually(`quiet before event ${n}`, quiet, { timeoutMs: 20_000 })
      await h.publish()
      await eventually(`event ${n} delivered to all eight`, () => h.receiver.requests.length >= delivered, { timeoutMs: 20_000 })
    }
    await h.dispatcher.stop()
    expect(h.receiver.maxConcurrent).toBeLessThanOrEqual(3)
    // Each fan-out's transaction leased as many as there were free slots.
    const rows = await h.db.selectFrom('ledger').select(['kind', 'tx_id']).where('kind', 'in', ['fanout.decided', 'delivery.claimed']).orderBy('position').execute()
    const fanouts = [...new Set(rows.filter((row) => row.kind === 'fanout.decided').map((row) => row.tx_id))]
    expect(fanouts.map((tx) => rows.filter((row) => row.kind === 'delivery.claimed' && row.tx_id === tx).length)).toEqual([3, 3])
    expect((await h.replay()).differences).toEqual([])
  })
})
