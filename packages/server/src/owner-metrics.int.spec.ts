/**
 * The per-owner gauges on a real database, read as the service's role: twelve owners with
 * waiting work expose ten named series and one `other` per gauge, whose figures add up to the
 * queue's; claimed deliveries count as in flight; a suspended owner is counted (its
 * `owner.suspended` entry through hookledger_write).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateWebhookSecret, secretKeyId } from '@hookledger/core'
import { deliveryClaim, endpointCreate, eventInsert, ledgerWrite } from '@hookledger/store'
import { engineHarness, type EngineHarness } from '@hookledger/testkit'
import { OWNER_METRICS_TOP_N } from './owner-metrics.js'
import { createServiceMetrics } from './service-metrics.js'

let h: EngineHarness
const owners = Array.from({ length: 12 }, (_, i) => `tenant-${String(i).padStart(2, '0')}`)

beforeAll(async () => {
  h = await engineHarness({ start: '2026-03-01T00:00:00Z' })
  // tenant-NN has NN + 1 events waiting to its one endpoint (nothing delivers: no dispatcher step).
  for (const [i, owner] of owners.entries()) {
    const secret = generateWebhookSecret()
    const ctx = { owner_id: owner, now: h.clock.now(), actor: 'owner:test' }
    await h.db.transaction().execute((trx) =>
      endpointCreate(trx, ctx, {
        url: h.receiver.url(), description: '', event_types: ['*'], embed_id: null,
        secret_sealed: h.secretBox.seal(secret), secret_key_id: secretKeyId(secret), signature_scheme: 'v1', v1a_key: null,
      }),
    )
    for (let k = 0; k <= i; k++) {
      const event = { id: `evt_${owner}_${k}`, type: 'booking.created', subject: `booking://${k}`, occurred_at: h.clock.now(), data: {} }
      await h.db.transaction().execute((trx) => eventInsert(trx, { owner_id: owner, event, now: h.clock.now(), actor: 'system' }))
    }
  }
  while ((await h.dispatcher.fanoutOnce()).events > 0) {
    // until every event is fanned out
  }
  await h.db.transaction().execute((trx) =>
    ledgerWrite(trx, { entries: [{ kind: 'owner.suspended', occurred_at: h.clock.now(), owner_id: owners[0]!, endpoint_id: null, delivery_id: null, event_id: null, actor: 'operator:test', payload: { reason: 'unpaid' } }] }),
  )
}, 120_000)
afterAll(async () => {
  await h?.close()
})

/** `name{labels} value` lines of the exposition, as a map. */
function samples(text: string): Map<string, number> {
  const m = new Map<string, number>()
  for (const line of text.split('\n')) {
    const s = /^([a-z_]+(?:\{[^}]*\})?) (\S+)$/.exec(line)
    if (s) m.set(s[1]!, Number(s[2]))
  }
  return m
}

describe('per-owner metrics', () => {
  it('name the top owners and sum the rest as "other": bounded series, nothing uncounted', async () => {
    const metrics = createServiceMetrics({ db: h.db, clock: h.clock })
    const m = samples((await metrics.render()).body)
    const waiting = [...m].filter(([k]) => k.startsWith('hookledger_owner_deliveries_waiting{'))
    expect(waiting).toHaveLength(OWNER_METRICS_TOP_N + 1)
    // The busiest ten by name (tenant-11 has 12 waiting … tenant-02 has 3); tenant-00 and -01 are "other".
    expect(m.get('hookledger_owner_deliveries_waiting{owner="tenant-11"}')).toBe(12)
    expect(m.get('hookledger_owner_deliveries_waiting{owner="tenant-02"}')).toBe(3)
    expect(m.has('hookledger_owner_deliveries_waiting{owner="tenant-01"}')).toBe(false)
    expect(m.get('hookledger_owner_deliveries_waiting{owner="other"}')).toBe(1 + 2)
    expect(m.get('hookledger_owner_endpoints{owner="other"}')).toBe(2)
    // Due at the fake clock's now: all of it.
    const total = (prefix: string) => [...m].filter(([k]) => k.startsWith(prefix)).reduce((s, [, v]) => s + v, 0)
    expect(total('hookledger_owner_deliveries_due{')).toBe((12 * 13) / 2)
    expect(total('hookledger_owner_deliveries_due{')).toBe(m.get('hookledger_deliveries_due'))
    expect(total('hookledger_owner_deliveries_in_flight{')).toBe(0)
    expect(m.get('hookledger_owners_suspended')).toBe(1)
  })

  it('count claimed deliveries as in flight, owner by owner, and no longer as waiting', async () => {
    const { claimed } = await deliveryClaim(h.db, { now: h.clock.now(), limit: 100, actor: 'worker:test' })
    expect(claimed.length).toBeGreaterThan(0)
    const running = await h.db.selectFrom('deliveries').select(['owner_id']).where('state', '=', 'running').execute()
    expect(running).toHaveLength(claimed.length)
    // A fresh instance: the figures are cached per process for a few seconds.
    const m = samples((await createServiceMetrics({ db: h.db, clock: h.clock }).render()).body)
    const total = (prefix: string) => [...m].filter(([k]) => k.startsWith(prefix)).reduce((s, [, v]) => s + v, 0)
    expect(total('hookledger_owner_deliveries_in_flight{')).toBe(claimed.length)
    expect(total('hookledger_owner_deliveries_waiting{') + claimed.length).toBe((12 * 13) / 2)
    const busiest = running.filter((r) => r.owner_id === 'tenant-11').length
    expect(m.get('hookledger_owner_deliveries_in_flight{owner="tenant-11"}')).toBe(busiest)
    expect(m.get('hookledger_owner_deliveries_waiting{owner="tenant-11"}')).toBe(12 - busiest)
  })
})
