import { sql } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import {
  generateLedgerSigningKey,
  parseLedgerPublicKey,
  parseLedgerSigningKey,
  ledgerChainVerify,
} from '@hookledger/ledger'
import { deliveryClaim, deliveryRetire, endpointDelete } from '@hookledger/store'
import { bypassLedgerGuards, engineHarness, sealEverything, type EngineHarness } from '@hookledger/testkit'

const s = 1_000
const day = 24 * 3_600 * s
const key = parseLedgerSigningKey(generateLedgerSigningKey().secret)
const publicKey = parseLedgerPublicKey(key.publicKey)

/** Answers by event: `evt_gone*` 400 (discarded), `evt_retry*` 500 (retryable), else 204. */
const byEvent = (req: { body: string }) =>
  req.body.includes('"evt_gone') ? { status: 400 } : req.body.includes('"evt_retry') ? { status: 500 } : { status: 204 }

let h: EngineHarness
afterEach(() => h?.close())

const liveIds = async () => (await h.db.selectFrom('deliveries').select('event_id').orderBy('event_id').execute()).map((d) => d.event_id)
const entriesOf = (kind: string) =>
  sql<{ payload: Record<string, unknown>; owner_id: string; actor: string; occurred_at: Date; delivery_id: string | null; endpoint_id: string | null }>`
    select payload, owner_id, actor, occurred_at, delivery_id, endpoint_id from ledger where kind = ${kind} order by position
  `.execute(h.db).then((r) => r.rows)

/** The ledger rebuilds exactly the live tables, and the chain and checkpoints verify. */
async function expectLedgerClean() {
  const replay = await h.replay()
  expect(replay.differences).toEqual([])
  await sealEverything(h.db, key, () => h.clock.now())
  const chain = await ledgerChainVerify(h.db, { publicKey })
  expect(chain.problems).toEqual([])
  expect(chain.ok).toBe(true)
  return replay
}

describe('delivery retention', () => {
  it('retires exactly the settled deliveries older than the retention; keeps waiting, running and recent ones', async () => {
    h = await engineHarness({ reply: byEvent })
    await h.createEndpoint({ event_types: ['booking.*'] })
    const { endpoint: other } = await h.createEndpoint({ event_types: ['code.issued'] })
    // The recent one's own endpoint: a claim of the other's endpoint would take its lapsed lease
    // over, and with it the running delivery back (delivery-rescue.ts).
    await h.createEndpoint({ event_types: ['code.redeemed'] })
    // Day 0: one completes, one is discarded (400), one waits for its retry (500).
    for (const id of ['evt_done', 'evt_gone', 'evt_retry']) await h.publish({ id })
    for (let i = 0; i < 3; i++) await h.step()
    expect((await h.deliveryOf('evt_done')).state).toBe('completed')
    expect((await h.deliveryOf('evt_gone')).state).toBe('discarded')
    expect((await h.deliveryOf('evt_retry')).state).toBe('retryable')
    // …and one is claimed by a worker that never comes back: running, last changed on day 0.
    await h.publish({ id: 'evt_running', type: 'code.issued' })
    await h.dispatcher.fanoutOnce()
    const dead = await deliveryClaim(h.db, { now: h.clock.now(), limit: 8, actor: 'worker:dead' })
    expect(dead.claimed.map((c) => c.event.id)).toEqual(['evt_running'])
    expect(dead.claimed[0]!.endpoint.id).toBe(other.id)
    // Day 20: a recent one completes (on a third endpoint: the first is failing, so its new
    // deliveries wait out a cool-down).
    h.clock.advance(20 * day)
    await h.publish({ id: 'evt_recent', type: 'code.redeemed' })
    await h.step()
    expect((await h.deliveryOf('evt_recent')).state).toBe('completed')

    // Day 30, one millisecond short of 30 days after the day-0 settles: nothing is old enough.
    h.clock.set(new Date(h.clock.now().getTime() - 20 * day + 30 * day - 1))
    expect(await deliveryRetire(h.db, { now: h.clock.now(), retentionDays: 30, actor: 'system' })).toEqual({ retired: 0, batches: 0 })

    // Day 31: the two settled day-0 deliveries leave; the running one (its lease long gone, but
    // not yet rescued), the waiting one and the recent one stay.
    h.clock.advance(day)
    const done = (await h.deliveryOf('evt_done')).id
    const gone = (await h.deliveryOf('evt_gone')).id
    expect(await deliveryRetire(h.db, { now: h.clock.now(), retentionDays: 30, actor: 'system' })).toEqual({ retired: 2, batches: 1 })
    expect(await liveIds()).toEqual(['evt_recent', 'evt_retry', 'evt_running'])
    const [entry, ...more] = await entriesOf('deliveries.retired')
    expect(more).toEqual([])
    expect(entry).toEqual({
      payload: { delivery_ids: [done, gone].sort(), count: 2, cutoff: new Date(h.clock.now().getTime() - 30 * day).toISOString() },
      owner_id: '*',
      actor: 'system',
      occurred_at: h.clock.now(),
      delivery_id: null,
      endpoint_id: null,
    })
    // The retired deliveries' own entries stay in the ledger.
    expect((await h.ledgerOf('delivery_id', done)).map((e) => e.kind)).toEqual([
      'delivery.enqueued', 'delivery.claimed', 'delivery.attempted',
    ])
    const replay = await expectLedgerClean()
    expect(replay.deliveries).toBe(3)

    // The maintenance pass does the same: the rescued delivery retries, the recent one ages out.
    h.clock.advance(20 * day)
    const report = await h.dispatcher.maintenanceOnce()
    expect(report).toMatchObject({ rescued: 1, retired: 1 })
    expect(await liveIds()).toEqual(['evt_retry', 'evt_running'])
    expect((await h.deliveryOf('evt_running')).state).toBe('retryable')
    await expectLedgerClean()
  })

  it('works a backlog off in bounded batches, one entry per batch', async () => {
    h = await engineHarness({ concurrency: 64 })
    for (let i = 0; i < 5; i++) await h.createEndpoint()
    for (let i = 0; i < 7; i++) await h.publish({ id: `evt_b${i}` })
    while ((await h.step()).claimed > 0) {}
    expect(await h.db.selectFrom('deliveries').where('state', '=', 'completed').select(sql<number>`count(*)::int`.as('n')).executeTakeFirst()).toEqual({ n: 35 })
    h.clock.advance(31 * day)
    const pass = { now: h.clock.now(), retentionDays: 30, actor: 'system', batchSize: 10, maxBatches: 2 }
    expect(await deliveryRetire(h.db, pass)).toEqual({ retired: 20, batches: 2 })
    expect(await deliveryRetire(h.db, pass)).toEqual({ retired: 15, batches: 2 })
    expect(await deliveryRetire(h.db, pass)).toEqual({ retired: 0, batches: 0 })
    expect((await entriesOf('deliveries.retired')).map((e) => e.payload['count'])).toEqual([10, 10, 10, 5])
    expect(await liveIds()).toEqual([])
    const replay = await expectLedgerClean()
    expect(replay).toMatchObject({ deliveries: 0, live: { deliveries: 0 } })
  })

  it('a batch takes the owners in turn, each one\'s oldest first, until it is full', async () => {
    h = await engineHarness()
    await h.createEndpoint()
    await h.createEndpoint({ owner_id: 'other' })
    for (let i = 0; i < 3; i++) await h.publish({ id: `evt_mine${i}` })
    for (let i = 0; i < 4; i++) await h.publish({ id: `evt_theirs${i}` }, 'other')
    while ((await h.step()).claimed > 0) {}
    h.clock.advance(31 * day)
    const pass = { now: h.clock.now(), retentionDays: 30, actor: 'system', batchSize: 5, maxBatches: 3 }
    expect(await deliveryRetire(h.db, pass)).toEqual({ retired: 7, batches: 2 })
    const owners = await h.db.selectFrom('ledger').select(['owner_id', 'delivery_id'])
      .where('kind', '=', 'delivery.attempted').execute()
    const ownerOf = new Map(owners.map((r) => [r.delivery_id, r.owner_id]))
    // 'default' sorts before 'other': its three, then two of the other's; the rest next batch.
    expect((await entriesOf('deliveries.retired')).map((e) => (e.payload['delivery_ids'] as string[]).map((id) => ownerOf.get(id)).sort())).toEqual([
      ['default', 'default', 'default', 'other', 'other'],
      ['other', 'other'],
    ])
    expect(await liveIds()).toEqual([])
    await expectLedgerClean()
  })

  it('a retired delivery of a live endpoint: attempts are read from the ledger; the list no longer shows it', async () => {
    h = await engineHarness({ reply: byEvent, deliveryRetentionDays: 7 })
    const { endpoint } = await h.createEndpoint()
    await h.publish({ id: 'evt_retry_then_done' })
    await h.step()
    h.receiver.enqueue({ status: 204 })
    h.clock.advance(10 * s)
    await h.step()
    const d = await h.deliveryOf('evt_retry_then_done')
    expect(d).toMatchObject({ state: 'completed', attempts: 2 })
    h.clock.advance(8 * day)
    expect((await h.dispatcher.maintenanceOnce()).retired).toBe(1)
    const { attemptList, deliveryFromLedger, deliveryList } = await import('@hookledger/store')
    expect((await deliveryList(h.db, h.owner, endpoint.id, { limit: 10 })).data).toEqual([])
    expect(await deliveryFromLedger(h.db, h.owner, d.id)).toEqual(d)
    expect(await deliveryFromLedger(h.db, 'someone_else', d.id)).toBeNull()
    const { attempts } = await attemptList(h.db, h.owner, d.id)
    expect(attempts.map((a) => [a.attempt, a.status_code, a.outcome])).toEqual([
      [1, 500, 'retry_scheduled'],
      [2, 204, 'completed'],
    ])
    await expectLedgerClean()
  })

  it('the database refuses a delete of a delivery without a retirement naming it', async () => {
    h = await engineHarness()
    await h.createEndpoint()
    await h.publish({ id: 'evt_x' })
    await h.step()
    const d = await h.deliveryOf('evt_x')
    // The service may not delete at all; the write function removes a row only with the entry that removes it.
    await expect(h.db.deleteFrom('deliveries').where('id', '=', d.id).execute()).rejects.toThrow('permission denied for view deliveries')
    const retiredOther = { occurred_at: h.clock.now().toISOString(), owner_id: '*', kind: 'deliveries.retired', endpoint_id: null, delivery_id: null, event_id: null, actor: 'system',
      payload: { delivery_ids: ['00000000-0000-4000-8000-000000000000'], count: 1, cutoff: h.clock.now().toISOString() } }
    await expect(
      sql`select hookledger_write('*', ${JSON.stringify({ entries: [retiredOther], deliveries: { removed: [d.id] } })}::jsonb)`.execute(h.db),
    ).rejects.toThrow(`row_without_entry: delivery ${d.id} removed without a deliveries.retired entry naming it`)
    // Removed behind the ledger's back (guards off), replay names the row the ledger still has.
    await bypassLedgerGuards(h.db, async (trx) => {
      await sql`delete from delivery_states where id = ${d.id}`.execute(trx)
      await sql`delete from delivery_origins where id = ${d.id}`.execute(trx)
    })
    const replay = await h.replay()
    expect(replay.differences.map((x) => [x.kind, x.key])).toEqual([['missing_live', d.id]])
  })
})

describe('endpoint purge', () => {
  it('purges a deleted endpoint once none of its deliveries can still move, and no sooner', async () => {
    h = await engineHarness({ reply: byEvent })
    const { endpoint: kept } = await h.createEndpoint({ event_types: ['code.*'] })
    const { endpoint } = await h.createEndpoint({ event_types: ['booking.*'] })
    await h.publish({ id: 'evt_done' })
    await h.step()
    await h.publish({ id: 'evt_inflight' })
    await h.dispatcher.fanoutOnce()
    const inflight = await deliveryClaim(h.db, { now: h.clock.now(), limit: 8, actor: 'worker:slow' })
    expect(inflight.claimed.map((c) => c.event.id)).toEqual(['evt_inflight'])
    await h.db.transaction().execute((trx) => endpointDelete(trx, { owner_id: h.owner, now: h.clock.now(), actor: 'owner:test' }, endpoint.id))

    // Deleted, but a delivery is still running: it stays.
    expect((await h.dispatcher.maintenanceOnce()).purged).toBe(0)
    expect((await h.endpointOf(endpoint.id)).deleted_at).not.toBeNull()

    // The lease runs out; the rescuer makes it retryable: still not purged (a claim discards it).
    h.clock.advance(20 * s)
    expect(await h.dispatcher.maintenanceOnce()).toMatchObject({ rescued: 1, purged: 0 })
    h.clock.advance(10 * s)
    expect(await h.step()).toMatchObject({ settledOnClaim: 1 })
    expect((await h.deliveryOf('evt_inflight')).state).toBe('discarded')

    // Now everything of it is settled: purged, with its own entry; the live endpoint stays.
    const deletedAt = (await h.endpointOf(endpoint.id)).deleted_at!
    expect(await h.dispatcher.maintenanceOnce()).toMatchObject({ purged: 1, retired: 0 })
    expect((await h.db.selectFrom('endpoints').select('id').execute()).map((e) => e.id)).toEqual([kept.id])
    expect(await entriesOf('endpoint.purged')).toEqual([
      { payload: { deleted_at: deletedAt.toISOString() }, owner_id: h.owner, actor: 'system', occurred_at: h.clock.now(), delivery_id: null, endpoint_id: endpoint.id },
    ])
    expect((await h.dispatcher.maintenanceOnce()).purged).toBe(0)
    // Its queue head (the claim's endpoint_queue row) went with it; the live one's stays.
    expect((await h.db.selectFrom('endpoint_queue').select('endpoint_id').execute()).map((r) => r.endpoint_id)).toEqual([kept.id])
    // Its settled deliveries stay until the retention retires them.
    expect(await liveIds()).toEqual(['evt_done', 'evt_inflight'])
    await expectLedgerClean()

    h.clock.advance(31 * day)
    expect((await h.dispatcher.maintenanceOnce()).retired).toBe(2)
    expect(await liveIds()).toEqual([])
    const replay = await expectLedgerClean()
    expect(replay).toMatchObject({ endpoints: 1, deliveries: 0 })
  })

  it('the database refuses a delete of an endpoint without its endpoint.purged entry', async () => {
    h = await engineHarness()
    const { endpoint } = await h.createEndpoint()
    await expect(h.db.deleteFrom('endpoints').where('id', '=', endpoint.id).execute()).rejects.toThrow('permission denied for table endpoints')
    // An entry about it, but not the purge.
    const deleted = { occurred_at: h.clock.now().toISOString(), owner_id: h.owner, kind: 'endpoint.deleted', endpoint_id: endpoint.id, delivery_id: null, event_id: null, actor: 'system', payload: {} }
    await expect(
      sql`select hookledger_write(${h.owner}, ${JSON.stringify({ entries: [deleted], endpoints: { removed: [endpoint.id] } })}::jsonb)`.execute(h.db),
    ).rejects.toThrow(`row_without_entry: endpoint ${endpoint.id} removed without its endpoint.purged entry`)
  })
})
