import { afterAll, describe, expect, it } from 'vitest'
import { eventually } from '@hookledger/testkit'
import { runCli } from '../e2e/cli-process.js'
import { FaultRig, VerifyingReceiver, faultEvents, publishOne, report, scaled, tally } from './fault-harness.js'

const OUTAGES = 3
const OUTAGE_MS = scaled(1_500, 5_000)
const ENDPOINTS = scaled(4, 8)
/** Published before the drain; one more is tried during each outage and again after it. */
const EVENTS = scaled(200, 1_200)

describe('the database restarts during a drain', () => {
  const rig = new FaultRig()
  // A little slow, so the drain is still running when each outage starts.
  const receiver = new VerifyingReceiver({ delayMs: 20 })
  afterAll(async () => {
    await receiver.close()
    await rig.close()
  })

  it(`survives ${OUTAGES} outages mid-drain: 503 with Retry-After while down, everything delivered, the ledger replays and verifies`, async () => {
    const began = performance.now()
    await rig.open()
    await receiver.start()
    await rig.createEndpoints(receiver, ENDPOINTS)
    const events = faultEvents(EVENTS + OUTAGES, ENDPOINTS)
    const duringOutage = events.slice(EVENTS)
    const env = rig.env()
    const serve = await rig.serve([], env)
    const token = await rig.token(['admin', 'publish'])
    await rig.publishViaApi(serve.url, token, events.slice(0, EVENTS))

    let unavailable = 0
    for (let i = 0; i < OUTAGES; i++) {
      await eventually(`${i + 1}/${OUTAGES + 1} of the drain`, () => tally(receiver, events).delivered >= (EVENTS * (i + 1)) / (OUTAGES + 1))
      await rig.outage(OUTAGE_MS, async () => {
        // Down: the API says so (503 problem+json, Retry-After), never 500, for reads and publishes alike.
        for (const res of [
          await fetch(`${serve.url}/api/admin/webhooks`, { headers: { authorization: `Bearer ${token}` } }),
          await publishOne(serve.url, token, duringOutage[i]!),
        ]) {
          expect(res.status, await res.text()).toBe(503)
          expect(res.headers.get('content-type')).toContain('application/problem+json')
          expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0)
          unavailable++
        }
      })
      expect(serve.exited(), serve.output()).toBe(false)
      // Back: the client's retry of what was refused is accepted.
      const retried = await eventually('the API to accept the refused event', async () => {
        const res = await publishOne(serve.url, token, duringOutage[i]!)
        return res.status === 202 && res
      })
      expect(retried.status).toBe(202)
    }

    try {
      await rig.drained(receiver, events, scaled(90_000, 300_000))
    } finally {
      const seconds = ((performance.now() - began) / 1000).toFixed(1)
      report('db-restarts', tally(receiver, events), { outages: rig.outages, outage_ms: OUTAGE_MS, kills: 0, api_503: unavailable, seconds })
    }
    const result = tally(receiver, events)
    expect(serve.exited(), serve.output()).toBe(false)
    expect(await rig.terminate(serve), serve.output()).toBe(0)

    const replay = await runCli(['ledger', 'replay', '--verify'], env)
    expect(replay.code, replay.stdout + replay.stderr).toBe(0)
    expect(replay.stdout).toContain('no differences')
    const verify = await runCli(['ledger', 'verify'], env)
    expect(verify.code, verify.stdout + verify.stderr).toBe(0)
    expect(result.lost).toBe(0)
    expect(result.maxInFlightPerEndpoint).toBe(1)
  })
})
