/**
 * Fair share of a worker's slots across owners (issue 24 item 1): weighted max-min fairness.
 * A slot goes to the owner whose slots, counting the one it would take, are fewest per unit of
 * weight — so an owner flooding two thousand slow endpoints holds no more than its share while
 * another owner has due work, and all of them when nobody else has. Pure: the store reads who is
 * ready, the dispatcher counts what it holds.
 */

/** An endpoint ready to be claimed, with its owner. */
export interface FairCandidate {
  readonly endpoint_id: string
  readonly owner_id: string
  readonly ready_at: Date
}

/** What the share of an owner depends on. */
export interface OwnerShareState {
  /** Slots this worker has running for the owner now. */
  readonly inFlight: number
  /** The owner's weight (1 unless an operator set it). */
  readonly weight: number
}

const stateOf = (owners: ReadonlyMap<string, OwnerShareState>, id: string): OwnerShareState => owners.get(id) ?? { inFlight: 0, weight: 1 }

/**
 * Orders candidates for `limit` free slots: within an owner by `ready_at` (then endpoint id),
 * across owners by the share each would hold after taking it, `(inFlight + k) / weight` for its
 * k-th candidate — so the owner holding least per weight goes first, and ties go to the earlier
 * ready time. The result is at most `limit` long.
 */
export function fairShareOrder<C extends FairCandidate>(candidates: readonly C[], owners: ReadonlyMap<string, OwnerShareState>, limit: number): C[] {
  const byOwner = new Map<string, C[]>()
  for (const c of candidates) {
    const list = byOwner.get(c.owner_id)
    if (list) list.push(c)
    else byOwner.set(c.owner_id, [c])
  }
  const keyed: { c: C; key: number }[] = []
  for (const [owner, list] of byOwner) {
    list.sort(byReadyThenId)
    const { inFlight, weight } = stateOf(owners, owner)
    list.forEach((c, k) => keyed.push({ c, key: (inFlight + k + 1) / weight }))
  }
  keyed.sort((a, b) => a.key - b.key || byReadyThenId(a.c, b.c))
  return keyed.slice(0, Math.max(0, limit)).map((k) => k.c)
}

function byReadyThenId(a: FairCandidate, b: FairCandidate): number {
  return a.ready_at.getTime() - b.ready_at.getTime() || (a.endpoint_id < b.endpoint_id ? -1 : a.endpoint_id > b.endpoint_id ? 1 : 0)
}

/**
 * An owner's fair number of slots: `slots × weight ÷ Σ weights` over the owners that are running
 * or waiting, rounded down, at least 1.
 */
export function fairSlots(owner: string, slots: number, active: ReadonlyMap<string, OwnerShareState>): number {
  let total = 0
  for (const s of active.values()) total += s.weight
  const weight = stateOf(active, owner).weight
  return Math.max(1, Math.floor((slots * weight) / Math.max(total, weight)))
}

/**
 * With every slot taken, which owners' turns give their slot back after the delivery they are
 * on (no pipelined next send, the endpoint's lease released) so that an owner waiting below its
 * share gets one: those holding more than their share, while any waiting owner holds less than
 * its own. Empty when nobody waiting is short of its share (one owner alone keeps every slot).
 *
 * `running`: owners with slots in this worker; `waiting`: owners with ready work it has not
 * claimed (suspended ones and ones at their `max_in_flight` left out by the caller).
 */
export function ownersToYield(
  slots: number,
  running: ReadonlyMap<string, OwnerShareState>,
  waiting: ReadonlyMap<string, { readonly weight: number }>,
): Set<string> {
  const active = new Map<string, OwnerShareState>(running)
  for (const [id, { weight }] of waiting) if (!active.has(id)) active.set(id, { inFlight: 0, weight })
  const starved = [...waiting.keys()].some((id) => stateOf(active, id).inFlight < fairSlots(id, slots, active))
  if (!starved) return new Set()
  const over = new Set<string>()
  for (const [id, s] of running) if (s.inFlight > fairSlots(id, slots, active)) over.add(id)
  return over
}
