// Issue 22's fault lines for how an endpoint is called: a rate-limited endpoint under worker
// kills and a PostgreSQL restart stays within its rate and loses nothing; a strict-ordered one
// never delivers out of order across retries, kills and a redelivery. Real `serve` processes,
// a real PostgreSQL the test stops, a real receiver that records every arrival.
import { afterAll, describe, expect, it } from 'vitest'
import { deliveryRedeliver, endpointUpdate } from '@hookledger/store'
import type { EndpointPatch } from '@hookledger/core'
import { eventually } from '@hookledger/testkit'
import { runCli } from '../e2e/cli-process.js'
import { FaultRig, VerifyingReceiver, faultEvents, report, scaled, tally, type Serve, type ReceiverHit } from './fault-harness.js'

const WORKERS = 2

async function configure(rig: FaultRig, endpointId: string, patch: EndpointPatch): Promise<void> {
  await rig.db.transaction().execute((trx) => endpointUpdate(trx, { owner_id: 'default', now: new Date(), actor: 'owner:faults' }, endpointId, patch))
}

async function replayClean(rig: FaultRig): Promise<void> {
  const replay = await runCli(['ledger', 'replay', '--verify'], rig.env())
  expect(replay.code, replay.stdout + replay.stderr).toBe(0)
}

/** The most arrivals in any window of `ms` (a sliding window over the arrival times). */
function busiestWindow(hits: readonly ReceiverHit[], ms: number): number {
  const times = hits.map((h) => h.receivedAt).sort((a, b) => a - b)
  let most = 0
  for (let i = 0, j = 0; i < times.length; i++) {
    while (times[i]! - times[j]! >= ms) j++
    most = Math.max(most, i - j + 1)
  }
  return most
}

describe('a rate-limited endpoint under kills and a PostgreSQL restart', () => {
  const rig = new FaultRig()
  const receiver = new VerifyingReceiver()
  afterAll(async () => {
    await receiver.close()
    await rig.close()
  })

  const RATE = 20
  const BURST = 2
  const EVENTS = scaled(80, 600)

  it(`${RATE}/s, burst ${BURST}, ${WORKERS} workers: one killed mid-drain, the database restarted: never over the rate, nothing lost`, async () => {
    await rig.open()
    await receiver.start()
    const [endpoint] = await rig.createEndpoints(receiver, 1)
    await configure(rig, endpoint!, { rate_limit: { per_second: RATE, burst: BURST, adaptive: false } })
    const events = faultEvents(EVENTS, 1)
    const workers: Serve[] = []
    for (let i = 0; i < WORKERS; i++) workers.push(await rig.serve(['--role', 'worker']))
    await rig.publishViaStore(events)
    await eventually('a third of the drain', () => tally(receiver, events).delivered >= EVENTS / 3, { timeoutMs: 60_000 })
    await rig.kill9(workers[0]!)
    workers[0] = await rig.serve(['--role', 'worker'])
    await eventually('two thirds of the drain', () => tally(receiver, events).delivered >= (2 * EVENTS) / 3, { timeoutMs: 60_000 })
    await rig.outage(1_000, { mode: 'immediate' })
    await rig.drained(receiver, events, scaled(120_000, 300_000))
    const result = tally(receiver, events)
    // GCRA: in any second at most the burst plus a second's worth, re-sends after a kill included.
    const most = busiestWindow(receiver.hits, 1_000)
    const seconds = (receiver.hits.at(-1)!.receivedAt - receiver.hits[0]!.receivedAt) / 1000
    report('rate-limited', result, { rate: RATE, burst: BURST, busiest_second: most, achieved_per_sec: (receiver.hits.length / seconds).toFixed(1), outages: rig.outages, kills: 1 })
    expect(result.lost).toBe(0)
    // Claims are paced; arrivals carry a few ms of jitter on top, so one more may land in a window.
    expect(most).toBeLessThanOrEqual(RATE + BURST + 1)
    expect(result.maxInFlightPerEndpoint).toBe(1)
    for (const w of workers) expect(await rig.terminate(w), w.output()).toBe(0)
    await replayClean(rig)
  })
})

/**
 * For a failure's message: the arrivals (in order, with their answers) and the ledger rows of the
 * two events an out-of-order arrival names (`evt_A before evt_B`).
 */
async function orderTrace(rig: FaultRig, receiver: VerifyingReceiver, violation: string): Promise<string> {
  const ids = violation.split(' before ')
  const arrivals = receiver.hits.filter((h) => ids.includes(h.eventId)).map((h) => `${h.eventId} at ${h.receivedAt.toFixed(1)} → ${h.status}`)
  const rows = await rig.db
    .selectFrom('ledger')
    .select(['position', 'kind', 'event_id', 'delivery_id', 'actor', 'occurred_at', 'payload'])
    .where('event_id', 'in', ids)
    .orderBy('position')
    .execute()
  const about = rows.map((r) => `${r.position} ${r.kind} ${r.event_id} ${r.actor} ${r.occurred_at.toISOString()} ${JSON.stringify(r.payload).slice(0, 160)}`)
  return [`arrivals: ${arrivals.join('; ')}`, 'ledger rows:', ...about].join('\n')
}

describe('a strict-ordered endpoint under retries, kills and a redelivery', () => {
  const rig = new FaultRig()
  // Some events fail their first attempt (500: a 5 s backoff, the rest of the line waits).
  const EVENTS = scaled(60, 400)
  const failFirst = new Set([7, Math.floor(EVENTS / 2)].map((i) => `evt_${String(i).padStart(5, '0')}`))
  const receiver = new VerifyingReceiver({ delayMs: 20, statusOf: (eventId, nth) => (nth === 0 && failFirst.has(eventId) ? 500 : 204) })
  afterAll(async () => {
    await receiver.close()
    await rig.close()
  })

  /**
   * Arrivals that came before every earlier event had a 2xx: none, in a strict line. Event order
   * is the events' publish order here (occurred_at is the publish time, ids ascending).
   */
  function outOfOrder(order: readonly string[]): string[] {
    const done = new Set<string>()
    const bad: string[] = []
    for (const h of receiver.hits) {
      const k = order.indexOf(h.eventId)
      if (order.slice(0, k).some((e) => !done.has(e))) bad.push(`${h.eventId} before ${order.slice(0, k).find((e) => !done.has(e))}`)
      if (h.status !== null && h.status < 300) done.add(h.eventId)
    }
    return bad
  }

  it(`${EVENTS} events, ${WORKERS} workers, ${failFirst.size} failing heads, one worker killed, then an early event redelivered: every arrival in order`, async () => {
    await rig.open()
    await receiver.start()
    const [endpoint] = await rig.createEndpoints(receiver, 1)
    await configure(rig, endpoint!, { ordering: 'strict' })
    const events = faultEvents(EVENTS, 1)
    const workers: Serve[] = []
    for (let i = 0; i < WORKERS; i++) workers.push(await rig.serve(['--role', 'worker']))
    await rig.publishViaStore(events)
    await eventually('a fifth of the drain', () => tally(receiver, events).delivered >= EVENTS / 5, { timeoutMs: 60_000 })
    await rig.kill9(workers[1]!)
    workers[1] = await rig.serve(['--role', 'worker'])
    await rig.drained(receiver, events, scaled(120_000, 300_000))
    const bad = outOfOrder(events.map((e) => e.id))
    expect(bad, bad.length > 0 ? await orderTrace(rig, receiver, bad[0]!) : '').toEqual([])

    // An early event sent again goes before events published after it.
    const early = await rig.db.selectFrom('deliveries').select('id').where('event_id', '=', events[1]!.id).executeTakeFirstOrThrow()
    await rig.db.transaction().execute((trx) => deliveryRedeliver(trx, { owner_id: 'default', now: new Date(), actor: 'owner:faults' }, early.id))
    const more = faultEvents(EVENTS + 5, 1).slice(EVENTS)
    await rig.publishViaStore(more)
    await eventually('the redelivery and the new events', () => receiver.hits.filter((h) => h.status === 204 && [events[1]!.id, ...more.map((e) => e.id)].includes(h.eventId)).length === 2 + more.length, { timeoutMs: 60_000 })
    const tail = receiver.hits.map((h) => h.eventId).filter((id) => id === events[1]!.id || more.some((e) => e.id === id))
    expect(tail.slice(-(1 + more.length))).toEqual([events[1]!.id, ...more.map((e) => e.id)])
    const result = tally(receiver, [...events, ...more])
    report('strict-order', result, { failing_heads: failFirst.size, kills: 1, redelivered: 1 })
    expect(result.lost).toBe(0)
    expect(result.maxInFlightPerEndpoint).toBe(1)
    for (const w of workers) expect(await rig.terminate(w), w.output()).toBe(0)
    await replayClean(rig)
  })
})
