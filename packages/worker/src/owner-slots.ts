import { TURN_DELIVERIES_WHILE_OTHERS_WAIT, ownerReserves, ownerRoom, slotsToGiveBack, turnYieldsToWaiting, type RecentOwner } from '@hookledger/core'
import { ownersSuspended, ownersWaiting, type Db, type OwnerWeight, type ReadyOwner } from '@hookledger/store'

/** How long an owner counts as active after it last held a slot or waited for one. */
export const RECENT_OWNER_WINDOW_MS = 10_000

/** How often the owners past the window are forgotten. */
const RECENT_SWEEP_MS = 100

interface Recent {
  /** The most slots it held (or held plus one while waiting) in this window and the one before. */
  peakNow: number
  peakBefore: number
  windowStart: number
  lastSeen: number
}

/**
 * A dispatcher's slots, owner by owner (issue 24 item 1): how many each owner holds, how many of
 * the free ones each may take, and which owners' turns give their slot back after the delivery
 * they are on.
 *
 * An endpoint's turn keeps its slot while it has due work (the pipelined lease), and a slow
 * receiver holds one for its whole request. So an owner flooding slow endpoints would fill every
 * slot, and another owner publishing now and then would wait for one of those requests to end.
 * Instead, slots stay free for the owners active lately below their fair share, as many as they
 * used (core `ownerRoom`), and owners above their share give back the turns that headroom is
 * short of (`slotsToGiveBack`): only those end, the others keep pipelining. A suspended owner's
 * turns all stop. One owner alone has every slot.
 */
export class OwnerSlots {
  readonly #held = new Map<string, number>()
  /** Weights last seen (claims and looks name them) of the recent owners; an owner not seen weighs 1. */
  readonly #weights = new Map<string, number>()
  readonly #recent = new Map<string, Recent>()
  /**
   * The headroom rule's view of the recent owners, kept as each owner changes: a claim reads it
   * as it is. Built anew for every claim, it was a tenth of the dispatcher's thread at 2,000
   * owners (`npm run bench -- --only=latency-owners --profile`).
   */
  readonly #view = new Map<string, { inFlight: number; weight: number; peak: number }>()
  /** Turns each owner ends after the delivery they are on (Infinity: all, a suspended owner). */
  #giveBack = new Map<string, number>()
  #suspensionCheckedAt = -Infinity
  #sweptAt = -Infinity
  /** Served owners found suspended at the last check (kept until the next one). */
  #suspended: readonly string[] = []
  /** Ready endpoints left without a slot at the last claim or look, less the turns ended for them since. */
  #endpointsWaiting = 0

  /** `turnShare`: deliveries a turn keeps its slot for while endpoints wait (core default). */
  constructor(
    readonly slots: number,
    readonly turnShare = TURN_DELIVERIES_WHILE_OTHERS_WAIT,
  ) {}

  take(owner: string, nowMs: number): void {
    const held = (this.#held.get(owner) ?? 0) + 1
    this.#held.set(owner, held)
    this.#note(owner, held, nowMs)
  }

  give(owner: string): void {
    const n = (this.#held.get(owner) ?? 0) - 1
    if (n > 0) this.#held.set(owner, n)
    else this.#held.delete(owner)
    this.#refresh(owner)
  }

  /** Slots held per owner now. */
  get held(): ReadonlyMap<string, number> {
    return this.#held
  }

  /** Owners some of whose turns end after the delivery they are on. */
  get yielding(): ReadonlySet<string> {
    return new Set(this.#giveBack.keys())
  }

  /**
   * Whether an owner's turn may go on to its endpoint's next delivery (asked once per delivery,
   * with how many the turn has had): no while the owner still has slots to give back, each no
   * giving one back; and no once the turn has had its share while other endpoints wait for a slot
   * (core `turnYieldsToWaiting`), each no for one of them.
   */
  keepsTurn(owner: string, deliveriesInTurn = 0): boolean {
    const n = this.#giveBack.get(owner) ?? 0
    if (n > 0) {
      if (n === 1) this.#giveBack.delete(owner)
      else this.#giveBack.set(owner, n - 1)
      return false
    }
    if (!turnYieldsToWaiting(deliveriesInTurn, this.#endpointsWaiting, this.turnShare)) return true
    this.#endpointsWaiting--
    return false
  }

  /** For the claim: what each owner holds, and how many of `free` slots it may take (one table for all of them). */
  sharesOf(owners: readonly OwnerWeight[], free: number, nowMs: number): Map<string, { inFlight: number; room: number }> {
    // Forget first, then weigh: the weights named now are the ones the claim's takes will read.
    const recent = this.#recentOwners(nowMs)
    for (const o of owners) this.#weigh(o.owner_id, o.weight)
    const reserves = ownerReserves(this.slots, recent)
    return new Map(owners.map((o) => [o.owner_id, { inFlight: this.#held.get(o.owner_id) ?? 0, room: ownerRoom(o.owner_id, free, reserves, o.weight) }]))
  }

  /** With every slot taken: does an owner wait below its share, or was one it serves suspended? */
  async lookWhileFull(db: Db, now: Date): Promise<void> {
    const look = await ownersWaiting(db, now, [...this.#held.keys()])
    this.decide(0, look.waiting, performance.now(), look.suspended)
  }

  /**
   * After a claim left `free` slots, `waiting` owners and `endpointsWaiting` ready endpoints
   * untaken: decides again, and asks (at most once a second) whether an owner it serves was
   * suspended — its turns then stop after the delivery they are on.
   */
  async afterClaim(db: Db, free: number, waiting: readonly ReadyOwner[], endpointsWaiting?: number): Promise<void> {
    const nowMs = performance.now()
    const suspended = this.suspensionCheckDue(nowMs) ? await ownersSuspended(db, [...this.#held.keys()]) : undefined
    this.decide(free, waiting, nowMs, suspended, endpointsWaiting)
  }

  /** Whether to ask again which owners it serves were suspended (at most once a second while not full). */
  suspensionCheckDue(nowMs: number): boolean {
    if (this.#held.size === 0 || nowMs - this.#suspensionCheckedAt < 1_000) return false
    this.#suspensionCheckedAt = nowMs
    return true
  }

  /**
   * After a claim or a look: notes the owners left waiting (each wanted a slot for every endpoint
   * it has ready, beyond what it holds) and decides whose turns give their slot back — those above their share while fewer
   * slots are free than the others' headroom, and owners found suspended (`suspended`: a fresh
   * check's answer; omitted, the last one holds). `endpointsWaiting`: the ready endpoints a claim
   * left untaken (a look counts its owners' ready ones), for which turns end (`keepsTurn`).
   */
  decide(free: number, waiting: readonly ReadyOwner[], nowMs: number, suspended?: readonly string[], endpointsWaiting?: number): void {
    const recent = this.#recentOwners(nowMs)
    let counted = 0
    for (const o of waiting) {
      this.#weigh(o.owner_id, o.weight)
      const wanted = Math.max(1, Math.min(o.ready, o.room ?? o.ready))
      if (o.room === null || o.room > 0) {
        this.#note(o.owner_id, (this.#held.get(o.owner_id) ?? 0) + wanted, nowMs)
        counted += Math.min(o.ready, o.room ?? o.ready)
      }
    }
    this.#endpointsWaiting = endpointsWaiting ?? counted
    if (suspended !== undefined) this.#suspended = suspended
    this.#giveBack = slotsToGiveBack(free, ownerReserves(this.slots, recent))
    for (const id of this.#suspended) if (this.#held.has(id)) this.#giveBack.set(id, Infinity)
  }

  #note(owner: string, demand: number, nowMs: number): void {
    const r = this.#recent.get(owner)
    if (!r || nowMs - r.lastSeen >= RECENT_OWNER_WINDOW_MS) {
      this.#recent.set(owner, { peakNow: demand, peakBefore: 0, windowStart: nowMs, lastSeen: nowMs })
      this.#refresh(owner)
      return
    }
    if (nowMs - r.windowStart >= RECENT_OWNER_WINDOW_MS) {
      r.peakBefore = r.peakNow
      r.peakNow = 0
      r.windowStart = nowMs
    }
    r.peakNow = Math.max(r.peakNow, demand)
    r.lastSeen = nowMs
    this.#refresh(owner)
  }

  #weigh(owner: string, weight: number): void {
    if (this.#weights.get(owner) === weight) return
    this.#weights.set(owner, weight)
    this.#refresh(owner)
  }

  /** Brings an owner's entry in the view up to date with what it holds, weighs and wanted. */
  #refresh(owner: string): void {
    const r = this.#recent.get(owner)
    if (!r) {
      this.#view.delete(owner)
      return
    }
    const inFlight = this.#held.get(owner) ?? 0
    const weight = this.#weights.get(owner) ?? 1
    const peak = Math.max(r.peakNow, r.peakBefore, inFlight)
    const v = this.#view.get(owner)
    if (v) {
      v.inFlight = inFlight
      v.weight = weight
      v.peak = peak
    } else {
      this.#view.set(owner, { inFlight, weight, peak })
    }
  }

  /** The owners holding slots or seen within the window, as the headroom rule reads them (a live view). */
  #recentOwners(nowMs: number): ReadonlyMap<string, RecentOwner> {
    // Owners leave the 10 s window a tenth of a second late at most: a scan of them all per
    // claim was 3 % of the thread at 2,000 owners.
    if (nowMs - this.#sweptAt < RECENT_SWEEP_MS && nowMs >= this.#sweptAt) return this.#view
    this.#sweptAt = nowMs
    for (const [id, r] of this.#recent) {
      if (!this.#held.has(id) && nowMs - r.lastSeen >= RECENT_OWNER_WINDOW_MS) {
        this.#recent.delete(id)
        this.#view.delete(id)
      }
    }
    // Every claim and look names the weights of the owners it weighs: one forgotten is named again.
    for (const id of this.#weights.keys()) if (!this.#recent.has(id)) this.#weights.delete(id)
    return this.#view
  }
}
