import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { eventually } from '@hookledger/testkit'
import { runCli } from '../e2e/cli-process.js'
import { FaultRig, VerifyingReceiver, faultEvents, report, tally } from './fault-harness.js'

/**
 * The endpoint lease covers the delivery being sent and the one after it: after a 2xx the worker
 * sends the next one before the settle that claims it has committed. A worker killed at either
 * moment must leave the next one whole — no attempt spent on what was never sent, nothing lost,
 * never two requests at once.
 */
describe('a worker killed inside a pipelined endpoint lease', () => {
  /** Counted attempts (interrupted ones included) per event, from the ledger (an absent `counted` is true: ledger format 5). */
  async function attemptsByEvent(rig: FaultRig): Promise<Map<string, number>> {
    const { rows } = await sql<{ event_id: string; n: string }>`
      select event_id, count(*) as n from ledger
      where kind = 'delivery.attempted' and coalesce((payload->>'counted')::boolean, true) group by event_id
    `.execute(rig.db)
    return new Map(rows.map((r) => [r.event_id, Number(r.n)]))
  }

  it.each([
    ['while the first request is unanswered: the next, only read, stays pending with no attempt spent', 0],
    ['while the next one, sent ahead after a 2xx, is unanswered: it is delivered, charged only for what was sent', 1],
  ])('%s', async (_name, heldArrival) => {
    const began = performance.now()
    const rig = await new FaultRig().open()
    const receiver = new VerifyingReceiver()
    try {
      await receiver.start()
      await rig.createEndpoints(receiver, 1)
      const events = faultEvents(4, 1)
      receiver.held.add(heldArrival)
      const worker = await rig.serve(['--role', 'worker'])
      await rig.publishViaStore(events)
      await eventually('the held request to arrive', () => receiver.hits.length > heldArrival)
      const unsent = new Set(events.map((e) => e.id).filter((id) => !receiver.hits.some((h) => h.eventId === id)))
      await rig.kill9(worker)
      // Nothing the dead worker did not send was charged: the rescuer has only what it claimed.
      const charged = await attemptsByEvent(rig)
      for (const id of unsent) expect(charged.get(id) ?? 0, id).toBe(0)

      const restarted = await rig.serve(['--role', 'worker'])
      await rig.drained(receiver, events, 60_000)
      const result = tally(receiver, events)
      report('pipelined-lease', result, { held_arrival: heldArrival, kills: 1, seconds: ((performance.now() - began) / 1000).toFixed(1) })
      expect(result.lost).toBe(0)
      expect(result.maxInFlightPerEndpoint, await rig.describeOverlaps(receiver)).toBe(1)
      // Every counted attempt is a request the receiver saw: a delivery read ahead but never sent
      // costs nothing, and one sent ahead is charged once per request at most.
      const after = await attemptsByEvent(rig)
      for (const e of events) {
        const arrivals = receiver.hits.filter((h) => h.eventId === e.id).length
        expect(after.get(e.id) ?? 0, e.id).toBeGreaterThanOrEqual(1)
        expect(after.get(e.id) ?? 0, e.id).toBeLessThanOrEqual(arrivals)
      }
      expect(await rig.terminate(restarted), restarted.output()).toBe(0)
      const replay = await runCli(['ledger', 'replay', '--verify'], rig.env())
      expect(replay.code, replay.stdout + replay.stderr).toBe(0)
    } finally {
      await receiver.close()
      await rig.close()
    }
  })
})
