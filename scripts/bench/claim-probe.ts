/**
 * Timing `deliveryClaim` as the producer calls it, on due work made through the real publish and
 * fan-out path. Each claim runs at a later `now` than the last by more than a lease and the grid
 * a leased endpoint's queue head sits on (core leased-head.ts), so every endpoint is leasable and
 * ready again and each claim takes fresh heads. Before each, untimed, the rescuer takes the
 * previous claim's deliveries back: a claim that took their lapsed leases over would rescue them
 * itself (delivery-rescue.ts), and that is not the claim this measures.
 */
import { JOB_TIMEOUT_MS, LEASED_HEAD_GRID_MS } from '@hookledger/core'
import { deliveryClaim, deliveryRescue, fanoutRun, type Db } from '@hookledger/store'
import { eventId, publish } from './fixtures.js'
import type { Env } from './harness.js'
import { cfg } from './settings.js'
import { median, round } from './util.js'

export class ClaimProbe {
  #db: Db
  #base = new Date()
  #run = 0

  constructor(db: Db) {
    this.#db = db
  }

  /** Publishes `events` events of `owner` and fans them out (one due delivery per endpoint each). */
  async enqueue(env: Env, owner: string, events: number): Promise<number> {
    for (let i = 0; i < events; i++) await publish(this.#db, owner, eventId())
    let enqueued = 0
    for (;;) {
      const r = await fanoutRun(this.#db, { now: new Date(), catalog: env.catalog, embedAdmits: async () => false, actor: 'worker:bench' })
      if (r.events === 0) break
      enqueued += r.enqueued
    }
    this.#base = new Date(Date.now() + 1_000)
    return enqueued
  }

  #nextNow(): Date {
    return new Date(this.#base.getTime() + this.#run++ * (JOB_TIMEOUT_MS + LEASED_HEAD_GRID_MS + 1_000))
  }

  /** One claim of `cfg.claimLimit`, timed; it must take `expect` rows. */
  async timedClaim(expect: number): Promise<number> {
    const now = this.#nextNow()
    await deliveryRescue(this.#db, { now, limit: 100_000 })
    const t = performance.now()
    const r = await deliveryClaim(this.#db, { now, limit: cfg.claimLimit, actor: 'worker:bench' })
    const ms = round(performance.now() - t, 2)
    if (r.claimed.length !== expect) throw new Error(`a claim took ${r.claimed.length} rows, expected ${expect}`)
    return ms
  }

  /** One warm-up claim, then `runs` timed claims of `cfg.claimLimit`; each must take `expect` rows. */
  async measure(runs: number, expect: number): Promise<{ medianMs: number; runs: number[] }> {
    await this.timedClaim(expect)
    const times: number[] = []
    for (let i = 0; i < runs; i++) times.push(await this.timedClaim(expect))
    return { medianMs: median(times), runs: times }
  }
}
