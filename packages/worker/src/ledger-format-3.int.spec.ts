/**
 * Ledger format 3 (migration 0015, core fanout-enqueues.ts): a fan-out's `fanout.decided` is its
 * deliveries' enqueue, so a delivered delivery is two rows (its claim and its attempt). A ledger
 * that holds both formats — deliveries enqueued by their own `delivery.enqueued` rows before, by
 * their event's decision after — replays, seals and proves as one, and every reader sees the same
 * history either way.
 */
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { COOL_DOWN_MS, deliveryIdFor, fanoutEntries, type LedgerEntry } from '@hookledger/core'
import { generateLedgerSigningKey, ledgerChainVerify, ledgerReceipt, ledgerTrail, parseLedgerPublicKey, parseLedgerSigningKey, verifyLedgerReceipt } from '@hookledger/ledger'
import { attemptList, deliveryFromLedger, ledgerWrite } from '@hookledger/store'
import { engineHarness, sealEverything, type EngineHarness } from '@hookledger/testkit'

const key = parseLedgerSigningKey(generateLedgerSigningKey().secret)
const publicKey = parseLedgerPublicKey(key.publicKey)

describe('ledger format 3: a fan-out decision enqueues its deliveries', () => {
  let h: EngineHarness
  let endpointId = ''
  const kindsOf = async (eventId: string) =>
    (await sql<{ kind: string }>`select kind from ledger where event_id = ${eventId} order by position`.execute(h.db)).rows.map((r) => r.kind)

  beforeAll(async () => {
    h = await engineHarness()
    endpointId = (await h.createEndpoint()).endpoint.id
  })
  afterAll(() => h?.close())

  it('the fan-out writes one decision and no enqueue row; the delivery is its claim and its attempt', async () => {
    await h.publish({ id: 'evt_v2' })
    expect(await h.step()).toMatchObject({ enqueued: 1, attempted: 1 })
    expect(await kindsOf('evt_v2')).toEqual(['event.published', 'fanout.decided', 'delivery.claimed', 'delivery.attempted'])
    expect((await h.deliveryOf('evt_v2')).state).toBe('completed')
  })

  it('a format-2 fan-out (its decision without `enqueues`, an enqueue row each) still writes, replays and reads the same', async () => {
    const event = await h.publish({ id: 'evt_v1' })
    const decided = fanoutEntries({ event: { owner_id: h.owner, id: event.id, type: event.type }, matched: [{ id: endpointId, failing_since: null }], denied: [], visible: true }, { now: h.clock.now(), actor: 'worker:format-2' })[0]!
    const { enqueues: _format3, ...format2 } = decided.payload as Extract<LedgerEntry, { kind: 'fanout.decided' }>['payload']
    const enqueued: LedgerEntry = {
      ...decided,
      kind: 'delivery.enqueued',
      endpoint_id: endpointId,
      delivery_id: deliveryIdFor(endpointId, event.id),
      payload: { event_type: event.type, next_attempt_at: h.clock.now().toISOString(), cool_down: false },
    }
    await h.db.transaction().execute((trx) =>
      ledgerWrite(trx, { entries: [{ ...decided, payload: format2 } as LedgerEntry, enqueued], fannedOut: { events: [{ owner_id: h.owner, id: event.id }], at: h.clock.now() } }),
    )
    expect(await h.step()).toMatchObject({ enqueued: 0, attempted: 1 })
    expect(await kindsOf('evt_v1')).toEqual(['event.published', 'fanout.decided', 'delivery.enqueued', 'delivery.claimed', 'delivery.attempted'])
    const v1 = await h.deliveryOf('evt_v1')
    const v2 = await h.deliveryOf('evt_v2')
    // Each reader sees one run started by its enqueue, whichever row holds it.
    for (const d of [v1, v2]) {
      expect((await attemptList(h.db, h.owner, d.id)).runs).toEqual([{ run: 1, started_at: d.created_at, actor: 'worker:harness', previous_attempts: null }].map((r) => (d === v1 ? { ...r, actor: 'worker:format-2' } : r)))
      expect(await deliveryFromLedger(h.db, h.owner, d.id)).toEqual(d)
      expect((await ledgerTrail(h.db, { delivery_id: d.id }, 10)).data.map((r) => r.kind)).toEqual(
        d === v1 ? ['delivery.enqueued', 'delivery.claimed', 'delivery.attempted'] : ['fanout.decided', 'delivery.claimed', 'delivery.attempted'],
      )
    }
    expect((await h.replay()).differences).toEqual([])
  })

  it('a decision over a pair that already has a delivery keeps it: the write inserts nothing, replay agrees', async () => {
    const before = await h.deliveryOf('evt_v2')
    const again = fanoutEntries({ event: { owner_id: h.owner, id: 'evt_v2', type: 'booking.created' }, matched: [{ id: endpointId, failing_since: null }], denied: [], visible: true }, { now: h.clock.now(), actor: 'worker:again' })
    const written = await h.db.transaction().execute((trx) => ledgerWrite(trx, { entries: again, existingDeliveries: 'keep' }))
    expect(written.insertedDeliveries.size).toBe(0)
    expect(await h.deliveryOf('evt_v2')).toEqual(before)
    expect(await kindsOf('evt_v2')).toEqual(['event.published', 'fanout.decided', 'delivery.claimed', 'delivery.attempted', 'fanout.decided'])
    expect((await h.replay()).differences).toEqual([])
    // Its runs: one, from the first decision (the second kept it).
    expect((await attemptList(h.db, h.owner, before.id)).runs).toHaveLength(1)
  })

  it('a receipt proves the decision that enqueued the delivery beside its own rows, for both formats', async () => {
    await sealEverything(h.db, key, () => h.clock.now(), { maxRows: 5 })
    expect((await ledgerChainVerify(h.db, { publicKey })).ok).toBe(true)
    for (const [eventId, first] of [['evt_v2', 'fanout.decided'], ['evt_v1', 'delivery.enqueued']] as const) {
      const d = await h.deliveryOf(eventId)
      const receipt = (await ledgerReceipt(h.db, { owner_id: h.owner, delivery_id: d.id }))!
      expect(receipt.entries[0]!.row.kind, eventId).toBe(first)
      expect(verifyLedgerReceipt(receipt, { publicKey })).toMatchObject({ ok: true, unprovable: 0 })
      // Another delivery's receipt cannot borrow this one's decision.
      const other = { ...receipt, delivery_id: deliveryIdFor(endpointId, 'evt_nothing') }
      expect(verifyLedgerReceipt(other, { publicKey }).ok).toBe(false)
    }
  })
})

describe('ledger format 3: a cool-down travels in the decision', () => {
  let h: EngineHarness
  afterAll(() => h?.close())

  it('the delivery to a failing endpoint waits 5 minutes; replay rebuilds that time, and its receipt is its decision', async () => {
    h = await engineHarness()
    const failingId = (await h.createEndpoint()).endpoint.id
    h.receiver.enqueue({ status: 500 })
    await h.publish({ id: 'evt_fail' })
    await h.step()
    expect((await h.endpointOf(failingId)).failing_since).not.toBeNull()
    h.clock.advance(1_000)
    await h.publish({ id: 'evt_cooling' })
    expect(await h.step()).toMatchObject({ enqueued: 1, claimed: 0 })
    const until = new Date(h.clock.now().getTime() + COOL_DOWN_MS)
    const decision = (await sql<{ payload: Record<string, unknown> }>`select payload from ledger where kind = 'fanout.decided' and event_id = 'evt_cooling'`.execute(h.db)).rows[0]!.payload
    expect(decision).toMatchObject({ enqueues: true, matched: [failingId], cool_down: { endpoints: [failingId], until: until.toISOString() } })
    const cooling = await h.deliveryOf('evt_cooling')
    expect(cooling).toMatchObject({ state: 'pending', next_attempt_at: until })
    // Replay expands the decision in the database (hookledger_delivery_id, the cool-down's until).
    expect((await h.replay()).differences).toEqual([])
    // A pending delivery (no row names it yet) has a receipt: its decision, proven once sealed.
    await sealEverything(h.db, key, () => h.clock.now(), { maxRows: 5 })
    const receipt = (await ledgerReceipt(h.db, { owner_id: h.owner, delivery_id: cooling.id }))!
    expect(receipt.entries.map((e) => e.row.kind)).toEqual(['fanout.decided'])
    expect(verifyLedgerReceipt(receipt, { publicKey }).ok).toBe(true)
  })
})
