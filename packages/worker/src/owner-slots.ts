import { ownersToYield, type OwnerShareState } from '@hookledger/core'
import type { ReadyOwner } from '@hookledger/store'

/**
 * A dispatcher's slots, owner by owner (issue 24 item 1): how many each owner holds, and which
 * owners' turns give their slot back after the delivery they are on. An endpoint's turn keeps
 * its slot while it has due work (the pipelined lease); with every slot taken, an owner waiting
 * below its fair share would otherwise wait for a whole backlog to drain. So, while full, the
 * owners above their share (core `ownersToYield`) — and any suspended since — end their turns
 * one delivery at a time, and the claim hands the freed slots out by fair share.
 */
export class OwnerSlots {
  readonly #held = new Map<string, number>()
  /** Weights last seen (claims and looks name them); an owner not seen weighs 1. */
  readonly #weights = new Map<string, number>()
  #yielding = new Set<string>()
  #suspensionCheckedAt = -Infinity
  /** Served owners found suspended at the last check (kept until the next one). */
  #suspended: readonly string[] = []

  constructor(readonly slots: number) {}

  take(owner: string): void {
    this.#held.set(owner, (this.#held.get(owner) ?? 0) + 1)
  }

  give(owner: string): void {
    const n = (this.#held.get(owner) ?? 0) - 1
    if (n > 0) this.#held.set(owner, n)
    else this.#held.delete(owner)
  }

  /** Slots held per owner now (the claim's fair share counts them). */
  get held(): ReadonlyMap<string, number> {
    return this.#held
  }

  /** Owners whose turns end after the delivery they are on. */
  get yielding(): ReadonlySet<string> {
    return this.#yielding
  }

  /** Whether an owner's turn may go on to its endpoint's next delivery. */
  keepsTurn(owner: string): boolean {
    return !this.#yielding.has(owner)
  }

  /** Whether to ask again which owners it serves were suspended (at most once a second while not full). */
  suspensionCheckDue(nowMs: number): boolean {
    if (this.#held.size === 0 || nowMs - this.#suspensionCheckedAt < 1_000) return false
    this.#suspensionCheckedAt = nowMs
    return true
  }

  /**
   * Decides who gives slots back, from owners with ready work left waiting and owners suspended
   * (`suspended`: a fresh check's answer; omitted, the last one holds). With a free slot nobody
   * needs to for fair share: the claim has already given it out.
   */
  decide(full: boolean, waiting: readonly ReadyOwner[], suspended?: readonly string[]): void {
    for (const o of waiting) this.#weights.set(o.owner_id, o.weight)
    if (suspended !== undefined) this.#suspended = suspended
    if (!full && this.#suspended.length === 0) {
      this.#yielding = new Set()
      return
    }
    const running = new Map<string, OwnerShareState>()
    for (const [id, inFlight] of this.#held) running.set(id, { inFlight, weight: this.#weights.get(id) ?? 1 })
    const wait = new Map(waiting.filter((o) => o.room === null || o.room > 0).map((o) => [o.owner_id, { weight: o.weight }]))
    this.#yielding = full ? ownersToYield(this.slots, running, wait) : new Set()
    for (const id of this.#suspended) if (this.#held.has(id)) this.#yielding.add(id)
  }
}
