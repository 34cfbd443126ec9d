/**
 * The endpoint lease and the rescuer, through the real claim and settle code: an endpoint row
 * another transaction holds (skipped, nothing written), a lease another worker took since the
 * candidates were read (busy → snooze 2 s, no attempt spent), and a delivery left running by a
 * dead worker (rescued after the job timeout, its lost attempt recorded as interrupted, then
 * delivered).
 */
import { sql } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import { BUSY_SNOOZE_MS, DeliveryOutcome, JOB_TIMEOUT_MS, attemptPayloadOf, leasedHeadAt } from '@hookledger/core'
import { TRANSACTION_IDLE_LIMIT_MS, claimInTransaction, deliveryClaim, deliverySettle, endpointDelete } from '@hookledger/store'
import { adminDbOf, engineHarness, type EngineHarness } from '@hookledger/testkit'

const s = 1_000

let harness: EngineHarness | null = null
afterEach(async () => {
  await harness?.close()
  harness = null
})




/**
 * Resolves once some backend of this database waits on a lock while running a query like
 * `pattern`; stops quietly once `signal` is aborted (the wait became moot).
 */
async function untilWaiting(
  hx: EngineHarness,
  pattern: string,
  signal?: AbortSignal,
  timeoutMs = 5_000,
): Promise<void> {
  const deadline = performance.now() + timeoutMs
  while (!signal?.aborted) {
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock' and query like ${pattern}
    `.execute(hx.db)
    if (rows[0]!.n > 0) return
    if (performance.now() > deadline) throw new Error(`nothing waited on a lock running ${pattern}`)
    await new Promise((r) => setImmediate(r))
  }
}

describe('endpoint lease', () => {
  it('busy: a claim skips an endpoint another worker holds, then snoozes its delivery +2 s on the lease that worker took; no attempt spent', async () => {
    const h = (harness = await engineHarness())
    const { endpoint } = await h.createEndpoint()
    await h.publish({ id: 'evt_busy' })
    await h.dispatcher.fanoutOnce()
    const d0 = await h.deliveryOf('evt_busy')
    expect(d0).toMatchObject({ state: 'pending', attempts: 0 })
    const t0 = h.clock.now()
    const foreignLeaseUntil = new Date(t0.getTime() + JOB_TIMEOUT_MS)
    const foreignDelivery = '00000000-0000-4000-8000-00000000f0f0'

    // "Another worker" holds the endpoint row: the claim's candidate query still sees the
    // endpoint free; its lock skips the endpoint (and so its head) rather than waiting.
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    let rowLocked!: () => void
    const locked = new Promise<void>((r) => (rowLocked = r))
    const otherWorker = adminDbOf(h.db).transaction().execute(async (trx) => {
      await sql`select id from endpoints where id = ${endpoint.id}::uuid for update`.execute(trx)
      rowLocked()
      await gate
      // A lease whose delivery is not in this database: written behind the ledger's back.
      await sql`set local session_replication_role = replica`.execute(trx)
      await sql`
        update endpoints set busy_until = ${foreignLeaseUntil}, busy_delivery_id = ${foreignDelivery}::uuid
        where id = ${endpoint.id}::uuid
      `.execute(trx)
    })
    await locked
    expect(await h.step()).toMatchObject({ claimed: 0, settledOnClaim: 0, attempted: 0 })
    expect(await h.deliveryOf('evt_busy')).toEqual(d0)
    release()
    await otherWorker
    // The endpoint still looks ready (the lease went behind the queue's back, as a lease taken
    // between the candidates read and the lock would): the claim reads it busy and snoozes.
    expect(await h.step()).toMatchObject({ claimed: 0, settledOnClaim: 1, attempted: 0 })

    expect(h.receiver.requests).toHaveLength(0)
    const d = await h.deliveryOf('evt_busy')
    expect(d).toMatchObject({ state: 'pending', attempts: 0, claimed_by: null, lease_until: null })
    expect(d.next_attempt_at!.getTime() - t0.getTime()).toBe(BUSY_SNOOZE_MS)
    const ledger = await h.ledgerOf('delivery_id', d.id)
    expect(ledger.map((e) => [e.kind, e.payload])).toEqual([
      ['delivery.enqueued', expect.anything()],
      ['delivery.lease_busy', { next_attempt_at: new Date(t0.getTime() + 2 * s).toISOString() }],
    ])
    // the other worker's lease is untouched; no attempt history
    expect(await h.endpointOf(endpoint.id)).toMatchObject({
      busy_until: foreignLeaseUntil,
      busy_delivery_id: foreignDelivery,
      failing_since: null,
    })
    expect(await h.db.selectFrom('delivery_attempts').selectAll().execute()).toEqual([])

    // 2 s later the lease is still held: the busy endpoint is not even a candidate
    h.clock.advance(BUSY_SNOOZE_MS)
    expect(await h.step()).toMatchObject({ claimed: 0, settledOnClaim: 0 })
    expect(await h.deliveryOf('evt_busy')).toMatchObject({ state: 'pending', attempts: 0 })

    // The lease ended unreleased: the endpoint is read again at its head, the lease's end on
    // the 2 s grid (migration 0019), and its delivery is claimed and delivered: its first attempt.
    h.clock.set(foreignLeaseUntil)
    expect(await h.step()).toMatchObject({ claimed: 0, settledOnClaim: 0 })
    h.clock.set(leasedHeadAt(foreignLeaseUntil))
    expect(await h.step()).toMatchObject({ claimed: 1, attempted: 1 })
    expect(await h.deliveryOf('evt_busy')).toMatchObject({ state: 'completed', attempts: 1 })
    expect(await h.endpointOf(endpoint.id)).toMatchObject({
      busy_until: null,
      busy_delivery_id: null,
    })
    // (no replay check: the other worker's lease was written behind the ledger's back)
  })

  it('one delivery in flight per endpoint: the second waits until the first is settled', async () => {
    const h = (harness = await engineHarness())
    const { endpoint } = await h.createEndpoint()
    await h.publish({ id: 'evt_1' })
    await h.dispatcher.fanoutOnce()
    h.clock.advance(1 * s) // so evt_1 is the endpoint's head whatever the random ids
    await h.publish({ id: 'evt_2' })
    await h.dispatcher.fanoutOnce()
    const first = await deliveryClaim(h.db, { now: h.clock.now(), limit: 10, actor: 'worker:a' })
    expect(first.claimed.map((c) => c.event.id)).toEqual(['evt_1'])
    expect(await h.endpointOf(endpoint.id)).toMatchObject({
      busy_delivery_id: first.claimed[0]!.delivery.id,
      busy_until: new Date(h.clock.now().getTime() + JOB_TIMEOUT_MS),
    })
    // another worker finds nothing to claim: the endpoint's only candidate is leased
    expect(await deliveryClaim(h.db, { now: h.clock.now(), limit: 10, actor: 'worker:b' })).toEqual(
      {
        claimed: [],
        settled: 0,
        entries: [],
        ownersWaiting: [],
        endpointsWaiting: 0,
      },
    )
    // worker a acks; the lease is released and the second delivery goes out
    await h.db.transaction().execute((trx) =>
      deliverySettle(
        trx,
        [
          {
            delivery: first.claimed[0]!.delivery,
            actor: 'worker:a',
            outcome: DeliveryOutcome.completed({
              started_at: h.clock.now(),
              duration_ms: 3,
              status_code: 200,
              error: null,
              signed_with: [first.claimed[0]!.endpoint.secret_key_id],
            }),
          },
        ],
        h.clock.now(),
      ),
    )
    expect(await h.endpointOf(endpoint.id)).toMatchObject({
      busy_until: null,
      busy_delivery_id: null,
    })
    expect(await h.step()).toMatchObject({ claimed: 1, attempted: 1 })
    expect(await h.deliveryOf('evt_2')).toMatchObject({ state: 'completed', attempts: 1 })
    expect((await h.replay()).differences).toEqual([])
  })
})

describe('the claim transaction', () => {
  it('asks the server to end it after 10 s idle: a worker cut off while holding its locks does not hold them for good', async () => {
    const h = (harness = await engineHarness())
    await h.createEndpoint()
    await h.publish({ id: 'evt_idle_limit' })
    await h.dispatcher.fanoutOnce()
    const seen = await h.db.transaction().execute(async (trx) => {
      const before = (await sql<{ v: string }>`select current_setting('idle_in_transaction_session_timeout') as v`.execute(trx)).rows[0]!.v
      const { claimed } = await claimInTransaction(trx, { now: h.clock.now(), limit: 1, actor: 'worker:t' })
      const after = (await sql<{ v: string }>`select current_setting('idle_in_transaction_session_timeout') as v`.execute(trx)).rows[0]!.v
      return { before, claimed: claimed.length, after }
    })
    expect(seen).toEqual({ before: '0', claimed: 1, after: `${TRANSACTION_IDLE_LIMIT_MS / 1000}s` })
  })
})

describe('rescuer', () => {
  it('a delivery left running by a dead worker is rescued after 15 s, recorded as interrupted, then delivered', async () => {
    const h = (harness = await engineHarness())
    const { endpoint } = await h.createEndpoint()
    await h.publish({ id: 'evt_lost' })
    await h.dispatcher.fanoutOnce()
    const t0 = h.clock.now().getTime()
    // the "dead worker" claims and never comes back
    const dead = await deliveryClaim(h.db, { now: h.clock.now(), limit: 1, actor: 'worker:dead' })
    expect(dead.claimed).toHaveLength(1)
    const claimed = dead.claimed[0]!.delivery
    expect(claimed).toMatchObject({ state: 'running', claimed_by: 'worker:dead' })

    // before the job timeout, nothing is rescued and nothing else can claim it
    h.clock.set(t0 + JOB_TIMEOUT_MS - 1)
    expect(await h.dispatcher.maintenanceOnce()).toEqual({ rescued: 0, pruned: 0, retired: 0, purged: 0 })
    expect(await h.step()).toMatchObject({ claimed: 0, settledOnClaim: 0 })

    h.clock.set(t0 + 16 * s)
    expect(await h.step()).toMatchObject({ claimed: 0 }) // still running: not a candidate
    expect(await h.dispatcher.maintenanceOnce()).toEqual({ rescued: 1, pruned: 0, retired: 0, purged: 0 })
    let d = await h.deliveryOf('evt_lost')
    expect(d).toMatchObject({
      state: 'retryable',
      attempts: 1,
      claimed_by: null,
      lease_until: null,
    })
    expect(d.next_attempt_at!.getTime()).toBe(t0 + 16 * s + 5 * s)
    expect(d.last_error).toMatch(/^interrupted: worker:dead held the lease past /)
    const ledger = await h.ledgerOf('delivery_id', d.id)
    expect(ledger.map((e) => e.kind)).toEqual([
      'delivery.enqueued',
      'delivery.claimed',
      'delivery.attempted',
      'delivery.retry_scheduled',
    ])
    expect({ ...ledger[2], payload: attemptPayloadOf(ledger[2]!.payload as never) }).toMatchObject({
      actor: 'system',
      payload: {
        attempt: 1,
        counted: true,
        outcome: 'interrupted',
        status_code: null,
        started_at: new Date(t0).toISOString(),
      },
    })
    // The real time it held the lease: from the claim until the rescuer saw it expired.
    expect((ledger[2]!.payload as { duration_ms: number }).duration_ms).toBeGreaterThanOrEqual(JOB_TIMEOUT_MS)
    expect(ledger[3]!.payload).toEqual({
      next_attempt_at: new Date(t0 + 21 * s).toISOString(),
      backoff_ms: 5 * s,
    })
    // the lease is released; a lost worker is not the receiver's failure
    expect(await h.endpointOf(endpoint.id)).toMatchObject({
      busy_until: null,
      busy_delivery_id: null,
      failing_since: null,
    })

    // the dead worker's late ack is dropped: the row is no longer under its claim
    const late = await h.db.transaction().execute((trx) =>
      deliverySettle(
        trx,
        [
          {
            delivery: claimed,
            actor: 'worker:dead',
            outcome: DeliveryOutcome.completed({
              started_at: new Date(t0),
              duration_ms: 20_000,
              status_code: 200,
              error: null,
              signed_with: [],
            }),
          },
        ],
        h.clock.now(),
      ),
    )
    expect(late.size).toBe(0)
    expect(await h.deliveryOf('evt_lost')).toMatchObject({ state: 'retryable', attempts: 1 })
    // …but what the receiver answered is in the ledger, not lost.
    const afterLate = await h.ledgerOf('delivery_id', d.id)
    expect(afterLate).toHaveLength(5)
    expect(afterLate[4]).toMatchObject({
      kind: 'delivery.settle_dropped',
      actor: 'worker:dead',
      payload: { outcome: 'completed', status_code: 200, duration_ms: 20_000, claimed_by: claimed.claimed_by },
    })

    // the retry goes out (at-least-once) and completes
    h.clock.set(d.next_attempt_at!)
    expect(await h.step()).toMatchObject({ claimed: 1, attempted: 1 })
    d = await h.deliveryOf('evt_lost')
    expect(d).toMatchObject({ state: 'completed', attempts: 2, last_status: 204 })
    expect(h.receiver.requests).toHaveLength(1)
    const history = await h.db
      .selectFrom('delivery_attempts')
      .select(['attempt', 'outcome', 'actor'])
      .where('delivery_id', '=', d.id)
      .orderBy('ledger_position')
      .execute()
    expect(history).toEqual([
      { attempt: 1, outcome: 'interrupted', actor: 'system' },
      { attempt: 2, outcome: 'completed', actor: 'worker:harness' },
    ])
    expect((await h.replay()).differences).toEqual([])
  })

  it('a claim that takes over a lapsed lease takes the lost delivery back first, and its rescue does not release the new lease', async () => {
    const h = (harness = await engineHarness())
    const { endpoint } = await h.createEndpoint()
    await h.publish({ id: 'evt_lost' })
    await h.dispatcher.fanoutOnce()
    const t0 = h.clock.now().getTime()
    const lost = await deliveryClaim(h.db, { now: h.clock.now(), limit: 1, actor: 'worker:dead' })
    expect(lost.claimed.map((c) => c.event.id)).toEqual(['evt_lost'])

    h.clock.set(t0 + 1 * s)
    await h.publish({ id: 'evt_next' })
    await h.dispatcher.fanoutOnce()
    // after the lost lease expires, a live worker takes the endpoint for the next delivery, and
    // the lost one back in the same transaction: no running delivery is left that no lease names
    h.clock.set(t0 + 16 * s)
    const live = await deliveryClaim(h.db, { now: h.clock.now(), limit: 1, actor: 'worker:live' })
    expect(live.claimed.map((c) => c.event.id)).toEqual(['evt_next'])
    const nextId = live.claimed[0]!.delivery.id
    expect(await h.deliveryOf('evt_lost')).toMatchObject({ state: 'retryable', attempts: 1 })
    const lostId = (await h.deliveryOf('evt_lost')).id
    expect((await h.ledgerOf('delivery_id', lostId)).slice(1).map((e) => [e.kind, e.actor])).toEqual([
      ['delivery.claimed', 'worker:dead'],
      ['delivery.attempted', 'system'],
      ['delivery.retry_scheduled', 'system'],
    ])
    expect(await h.dispatcher.maintenanceOnce()).toEqual({ rescued: 0, pruned: 0, retired: 0, purged: 0 })
    expect(await h.endpointOf(endpoint.id)).toMatchObject({
      busy_delivery_id: nextId,
      busy_until: new Date(t0 + 16 * s + JOB_TIMEOUT_MS),
    })
    // the live worker acks; then the rescued delivery's retry goes out
    await h.db.transaction().execute((trx) =>
      deliverySettle(
        trx,
        [
          {
            delivery: live.claimed[0]!.delivery,
            actor: 'worker:live',
            outcome: DeliveryOutcome.completed({
              started_at: h.clock.now(),
              duration_ms: 4,
              status_code: 200,
              error: null,
              signed_with: [],
            }),
          },
        ],
        h.clock.now(),
      ),
    )
    expect(await h.endpointOf(endpoint.id)).toMatchObject({
      busy_delivery_id: null,
      busy_until: null,
    })
    h.clock.set(t0 + 21 * s)
    expect(await h.step()).toMatchObject({ claimed: 1, attempted: 1 })
    expect(await h.deliveryOf('evt_lost')).toMatchObject({ state: 'completed', attempts: 2 })
    expect((await h.replay()).differences).toEqual([])
  })
})

describe('lock order', () => {
  it('deleting an endpoint while a claim takes its head delivery does not deadlock', async () => {
    // the head (earliest due) delivery, and a later one with a smaller id: the delete locks the
    // endpoint's waiting deliveries in id order, so it meets the later one first. Ids are
    // random: start over until the head's id is in the upper three quarters, so a smaller one
    // turns up within a few tries.
    let h: EngineHarness
    let endpoint: { id: string }
    let head: { id: string }
    for (;;) {
      h = harness = await engineHarness()
      endpoint = (await h.createEndpoint()).endpoint
      await h.publish({ id: 'evt_head' })
      await h.dispatcher.fanoutOnce()
      head = await h.deliveryOf('evt_head')
      if (head.id >= '4') break
      await h.close()
      harness = null
    }
    let low: { id: string; event_id: string } | null = null
    for (let i = 0; i < 200 && low === null; i++) {
      h.clock.advance(1 * s)
      await h.publish({ id: `evt_low_${i}` })
      await h.dispatcher.fanoutOnce()
      const d = await h.deliveryOf(`evt_low_${i}`)
      if (d.id < head.id) low = d
    }
    expect(low).not.toBeNull()

    // another transaction holds the low delivery, so the delete stops right before it
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    let rowLocked!: () => void
    const locked = new Promise<void>((r) => (rowLocked = r))
    const holder = h.db.transaction().execute(async (trx) => {
      await sql`select id from delivery_states where id = ${low!.id}::uuid for update`.execute(trx)
      rowLocked()
      await gate
    })
    await locked
    const ctx = { owner_id: h.owner, now: h.clock.now(), actor: 'owner:test' }
    const deletion = h.db.transaction().execute((trx) => endpointDelete(trx, ctx, endpoint.id))
    await untilWaiting(h, '%from delivery_states s join delivery_origins o%s.endpoint_id%for update of s%')
    // a claim now locks the head delivery and the endpoint row; never waiting on a lock, it
    // cannot deadlock with the delete, which then meets the head it holds
    const claimed = await deliveryClaim(h.db, { now: h.clock.now(), limit: 1, actor: 'worker:w' })
    expect(claimed).toMatchObject({ settled: 0, claimed: [{ delivery: { event_id: 'evt_head' } }] })
    release()
    const [deleted] = await Promise.allSettled([deletion, holder])
    // (when the claim locked the endpoint in a statement of its own, waiting, one of the two was
    // once aborted with "deadlock detected")
    expect(deleted).toEqual({ status: 'fulfilled', value: { discarded: expect.any(Number) } })
    // the claim took the head before the delete reached it; the delete discarded the rest
    expect(await h.deliveryOf('evt_head')).toMatchObject({ state: 'running' })
    expect(await h.deliveryOf(low!.event_id)).toMatchObject({ state: 'discarded' })
    expect(await h.endpointOf(endpoint.id)).toMatchObject({ deleted_at: h.clock.now() })
    expect((await h.replay()).differences).toEqual([])
  })
})
