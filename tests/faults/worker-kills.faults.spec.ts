import { afterAll, describe, expect, it } from 'vitest'
import { eventually } from '@hookledger/testkit'
import { runCli } from '../e2e/cli-process.js'
import { FaultRig, VerifyingReceiver, faultEvents, report, scaled, tally, type Serve } from './fault-harness.js'

const KILLS = scaled(3, 10)
const WORKERS = 2
const ENDPOINTS = scaled(4, 8)
const EVENTS = scaled(200, 2_000)
/** The moments are random but repeatable: `FAULTS_SEED=<n>` replays a run's kills. */
const SEED = Number(process.env['FAULTS_SEED'] ?? Math.floor(Math.random() * 2 ** 31))

/** mulberry32: a small seeded PRNG, so a failing run's kill moments can be replayed. */
function seeded(seed: number): () => number {
  let s = seed >>> 0
  return () => {
    s = (s + 0x6d2b79f5) >>> 0
    let t = Math.imul(s ^ (s >>> 15), 1 | s)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32
  }
}

describe('workers killed with SIGKILL during a drain', () => {
  const rig = new FaultRig()
  // Slow enough that the drain outlasts every kill and restart.
  const receiver = new VerifyingReceiver({ delayMs: 50 })
  afterAll(async () => {
    await receiver.close()
    await rig.close()
  })

  it(`${KILLS} kill -9s at random moments, each worker restarted: nothing lost, duplicates counted, never two requests at once`, async () => {
    const began = performance.now()
    const random = seeded(SEED)
    await rig.open()
    await receiver.start()
    await rig.createEndpoints(receiver, ENDPOINTS)
    const events = faultEvents(EVENTS, ENDPOINTS)
    const workers: Serve[] = []
    for (let i = 0; i < WORKERS; i++) workers.push(await rig.serve(['--role', 'worker']))
    await rig.publishViaStore(events)

    // Kill moments: random points in the first 60 % of the drain, by deliveries answered.
    const moments = Array.from({ length: KILLS }, () => 0.05 + random() * 0.55).sort((x, y) => x - y)
    let kills = 0
    /** Deliveries the killed workers held (claimed, not settled) when they died. */
    let interrupted = 0
    try {
      for (const moment of moments) {
        await eventually(`${Math.round(moment * 100)} % of the drain`, () => tally(receiver, events).delivered >= moment * EVENTS)
        // The victim: a random one of the workers holding deliveries now (a kill that interrupts
        // nothing proves little), or of all when none does.
        const holding = await rig.db.selectFrom('deliveries').select('claimed_by').where('state', '=', 'running').execute()
        const held = (w: Serve) => holding.filter((d) => d.claimed_by?.endsWith(`:${w.pid}`)).length
        const candidates = workers.map((_, i) => i).filter((i) => held(workers[i]!) > 0)
        const pool = candidates.length > 0 ? candidates : workers.map((_, i) => i)
        const victim = pool[Math.floor(random() * pool.length)]!
        await rig.kill9(workers[victim]!)
        kills++
        interrupted += (
          await rig.db.selectFrom('deliveries').select('id').where('state', '=', 'running').where('claimed_by', 'like', `%:${workers[victim]!.pid}`).execute()
        ).length
        // Still mid-drain: the kill interrupted work, it did not come after it.
        expect(tally(receiver, events).delivered).toBeLessThan(EVENTS)
        workers[victim] = await rig.serve(['--role', 'worker'])
      }
      await rig.drained(receiver, events, scaled(90_000, 300_000))
    } finally {
      const seconds = ((performance.now() - began) / 1000).toFixed(1)
      report('worker-kills', tally(receiver, events), { outages: 0, kills, interrupted, workers: WORKERS, seed: SEED, seconds })
    }
    const result = tally(receiver, events)
    expect(result.lost).toBe(0)
    expect(result.maxInFlightPerEndpoint, await rig.describeOverlaps(receiver)).toBe(1)
    for (const w of workers) expect(await rig.terminate(w), w.output()).toBe(0)
    const replay = await runCli(['ledger', 'replay', '--verify'], rig.env())
    expect(replay.code, replay.stdout + replay.stderr).toBe(0)
  })
})
