import { afterAll, describe, expect, it } from 'vitest'
import { eventually, within } from '@hookledger/testkit'
import { runCli } from '../e2e/cli-process.js'
import { FaultRig, VerifyingReceiver, faultEvents, publishOne, report, scaled, tally } from './fault-harness.js'

/** How each outage starts: a fast shutdown (sessions terminated) or an immediate one (sessions dropped, crash recovery). */
const STOP_MODES = ['fast', 'immediate', 'fast'] as const
const OUTAGE_MS = scaled(1_500, 5_000)
const ENDPOINTS = scaled(4, 8)
/** Published before the drain; one more is tried during each outage and again after it. */
const EVENTS = scaled(200, 1_200)
/** An API request, even one that meets the outage mid-query, is answered within this (the pool's connect timeout is 10 s). */
const ANSWER_MS = 20_000

/**
 * Reads the API every 25 ms for the whole run, across every outage and its edges (where a
 * request may lose its connection mid-query), and counts the statuses: only 200 and 503 may appear.
 */
function probeApi(url: string, token: string) {
  const statuses = new Map<number | string, number>()
  let running = true
  const loop = (async () => {
    while (running) {
      const status = await fetch(`${url}/api/admin/webhooks`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(ANSWER_MS) })
        .then(async (res) => (await res.arrayBuffer(), res.status))
        .catch((err: Error) => `fetch failed: ${err.message}`)
      statuses.set(status, (statuses.get(status) ?? 0) + 1)
      await new Promise((r) => setTimeout(r, 25))
    }
  })()
  return {
    statuses,
    async stop() {
      running = false
      await loop
    },
  }
}

describe('the database restarts during a drain', () => {
  const rig = new FaultRig()
  // A little slow, so the drain is still running when each outage starts.
  const receiver = new VerifyingReceiver({ delayMs: 20 })
  afterAll(async () => {
    await receiver.close()
    await rig.close()
  })

  it(`survives ${STOP_MODES.length} outages mid-drain: 503 with Retry-After while down, never 500, everything delivered, the ledger replays and verifies`, async () => {
    const began = performance.now()
    // Every step is bounded and timed: a failure names the step that ran out, and the report
    // line shows where a slow run spent its time.
    const timings: string[] = []
    const step = async <T>(label: string, what: string, ms: number, work: () => Promise<T>): Promise<T> => {
      const t = performance.now()
      try {
        return await within(`${what} (${label})`, ms, work())
      } finally {
        timings.push(`${label}:${((performance.now() - t) / 1000).toFixed(1)}`)
      }
    }
    await step('open', 'the database and the receiver to open', 90_000, async () => {
      await rig.open()
      await receiver.start()
      await rig.createEndpoints(receiver, ENDPOINTS)
    })
    const events = faultEvents(EVENTS + STOP_MODES.length, ENDPOINTS)
    const duringOutage = events.slice(EVENTS)
    const env = rig.env()
    const serve = await step('serve', 'the service to start', 90_000, () => rig.serve([], env))
    const token = await rig.token(['admin', 'publish'])
    await step('publish', 'the events to be published', 60_000, () => rig.publishViaApi(serve.url, token, events.slice(0, EVENTS)))
    const prober = probeApi(serve.url, token)

    try {
      for (const [i, mode] of STOP_MODES.entries()) {
        const n = i + 1
        await eventually(`${n}/${STOP_MODES.length + 1} of the drain`, () => tally(receiver, events).delivered >= (EVENTS * n) / (STOP_MODES.length + 1), { timeoutMs: 60_000 })
        await step(`outage${n}`, `outage ${n} (${mode}): stop, the API's answers while down, start`, 150_000, () =>
          rig.outage(OUTAGE_MS, {
            mode,
            whileDown: async () => {
              // Down: the API says so (503 problem+json, Retry-After), for reads and publishes alike.
              for (const res of [
                await fetch(`${serve.url}/api/admin/webhooks`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(ANSWER_MS) }),
                await publishOne(serve.url, token, duringOutage[i]!, { timeoutMs: ANSWER_MS }),
              ]) {
                expect(res.status, await res.text()).toBe(503)
                expect(res.headers.get('content-type')).toContain('application/problem+json')
                expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0)
              }
            },
          }),
        )
        expect(serve.exited(), serve.output()).toBe(false)
        // Back: the client's retry of what was refused is accepted.
        await step(`back${n}`, 'the API to accept the refused event', 60_000, () =>
          eventually('the API to accept the refused event', async () => (await publishOne(serve.url, token, duringOutage[i]!, { timeoutMs: ANSWER_MS })).status === 202, { timeoutMs: 50_000 }),
        )
      }
      await step('drain', 'the drain to finish', scaled(100_000, 310_000), () => rig.drained(receiver, events, scaled(90_000, 300_000)))
    } finally {
      await step('probe', 'the API prober to stop', ANSWER_MS + 5_000, () => prober.stop())
      const seconds = ((performance.now() - began) / 1000).toFixed(1)
      const api = [...prober.statuses].map(([status, n]) => `${status}:${n}`).join(',')
      report('db-restarts', tally(receiver, events), { outages: rig.outages, outage_ms: OUTAGE_MS, stops: STOP_MODES.join(','), kills: 0, api, seconds, steps: timings.join(',') })
    }
    const result = tally(receiver, events)
    expect(serve.exited(), serve.output()).toBe(false)
    expect([...prober.statuses.keys()].filter((s) => s !== 200 && s !== 503), serve.output()).toEqual([])
    expect(prober.statuses.get(503)).toBeGreaterThan(0)
    expect(await step('stop', 'the service to stop after SIGTERM', 50_000, () => rig.terminate(serve)), serve.output()).toBe(0)

    const replay = await step('replay', 'ledger replay --verify', 90_000, () => runCli(['ledger', 'replay', '--verify'], env))
    expect(replay.code, replay.stdout + replay.stderr).toBe(0)
    expect(replay.stdout).toContain('no differences')
    const verify = await step('verify', 'ledger verify', 90_000, () => runCli(['ledger', 'verify'], env))
    expect(verify.code, verify.stdout + verify.stderr).toBe(0)

    expect(result.lost).toBe(0)
    expect(result.maxInFlightPerEndpoint, await rig.describeOverlaps(receiver)).toBe(1)
  }, scaled(420_000, 1_200_000))
})
