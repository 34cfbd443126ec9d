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
  /** At most this many of the free slots (`ownerRoom`); absent: no bound but the free slots. */
  readonly room?: number
}

const stateOf = (owners: ReadonlyMap<string, OwnerShareState>, id: string): OwnerShareState => owners.get(id) ?? { inFlight: 0, weight: 1 }

/**
 * Orders candidates for `limit` free slots: within an owner by `ready_at` (then endpoint id),
 * across owners by the share each would hold after taking it, `(inFlight + k) / weight` for its
 * k-th candidate — so the owner holding least per weight goes first, and ties go to the earlier
 * ready time. The result is at most `limit` long.
 *
 * `yielded`: endpoints whose turns gave their slot up for others, in the order they did. Within
 * its owner such an endpoint comes after every one that did not, and they come in that order:
 * a fan-out makes many deliveries due at one instant, so by ready time alone an endpoint that
 * just gave way could win its slot straight back, and ties by id would serve the same few in
 * turn while the one with the highest id waited.
 */
export function fairShareOrder<C extends FairCandidate>(
  candidates: readonly C[],
  owners: ReadonlyMap<string, OwnerShareState>,
  limit: number,
  yielded: ReadonlySet<string> = new Set(),
): C[] {
  const yieldRank = new Map<string, number>()
  for (const id of yielded) yieldRank.set(id, yieldRank.size + 1)
  const order = (a: C, b: C) => (yieldRank.get(a.endpoint_id) ?? 0) - (yieldRank.get(b.endpoint_id) ?? 0) || byReadyThenId(a, b)
  const byOwner = new Map<string, C[]>()
  for (const c of candidates) {
    const list = byOwner.get(c.owner_id)
    if (list) list.push(c)
    else byOwner.set(c.owner_id, [c])
  }
  const keyed: { c: C; key: number }[] = []
  for (const [owner, list] of byOwner) {
    list.sort(order)
    const { inFlight, weight, room } = stateOf(owners, owner)
    list.slice(0, room ?? list.length).forEach((c, k) => keyed.push({ c, key: (inFlight + k + 1) / weight }))
  }
  keyed.sort((a, b) => a.key - b.key || order(a.c, b.c))
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

/** An owner as the headroom rule sees it: what it holds now, and the most it held or wanted lately. */
export interface RecentOwner {
  readonly inFlight: number
  readonly weight: number
  /** The most slots it held, or held plus one while it waited, within the recent window. */
  readonly peak: number
}

/**
 * The recent owners' sums, computed once a claim: Σ of their weights and of their reserves.
 * `ownerRoom` and `slotsToGiveBack` ask about every owner; asking the recent set anew each time
 * made a claim's questions cost O(owners³) (at 50 owners, 5 % of the dispatcher's thread at 200
 * deliveries/s in the latency bench). With the sums, each question is O(1) and the table O(owners),
 * one pass without allocation (at 2,000 owners the pass is what remains: `latency-owners`).
 */
export interface OwnerReserves {
  readonly slots: number
  /** Σ of the recent owners' weights (an owner not among them is weighed beside them: `ownerRoom`). */
  readonly weights: number
  /** Σ of the recent owners' reserves (`keptFor`). */
  readonly total: number
  readonly recent: ReadonlyMap<string, RecentOwner>
}

export function ownerReserves(slots: number, recent: ReadonlyMap<string, RecentOwner>): OwnerReserves {
  // fairSlots' own sum, in the same order, so each share is the one it computes.
  let weights = 0
  for (const r of recent.values()) weights += r.weight
  let total = 0
  for (const r of recent.values()) total += keptFor(r, shareOf(slots, r.weight, weights))
  return { slots, weights, total, recent }
}

/** `fairSlots` from its parts. */
const shareOf = (slots: number, weight: number, weights: number) => Math.max(1, Math.floor((slots * weight) / Math.max(weights, weight)))

/** A recent owner's fair number of slots (`fairSlots`). */
const fairOf = (r: RecentOwner, reserves: OwnerReserves) => shareOf(reserves.slots, r.weight, reserves.weights)

/**
 * Slots kept free for a recent owner: what it used lately and does not hold now, up to its fair
 * share. So an owner that publishes now and then finds a slot free at once instead of waiting for
 * another owner's slow request to end — the price is those few slots idle between its bursts.
 */
const keptFor = (r: RecentOwner, share: number) => Math.max(0, Math.min(r.peak, share) - r.inFlight)

/**
 * Σ of the other recent owners' reserves, never more than half the slots (at least one): the
 * headroom is a cushion for owners sending now and then, not a claim on the machine. Uncapped,
 * 2,000 such owners kept 2,000 slots of 128 between them, so an owner with a backlog was held to
 * its share of 1 and gave the rest back while the slots stood idle.
 */
function reservedForOthers(owner: string, reserves: OwnerReserves): number {
  const r = reserves.recent.get(owner)
  const others = reserves.total - (r === undefined ? 0 : keptFor(r, fairOf(r, reserves)))
  return Math.min(others, headroomMost(reserves.slots))
}

/** The most slots the headroom keeps for others: half the slots, at least one. */
export const headroomMost = (slots: number) => Math.max(1, Math.floor(slots / 2))

/**
 * How many of the `free` slots `owner` may take now: all of them but those kept for the other
 * owners active lately below their share (`reservedForOthers`), and never fewer than it is short
 * of its own fair share — it is one of the owners the reserves are for. Without that floor, more
 * recent owners than slots (2,000 tenants sending now and then, 100 slots) reserved more than
 * every slot between them, and no owner new to the window got one until the window forgot the
 * others (`npm run bench -- --only=latency,latency-owners` saw 97 of 400 deliveries in 30 s).
 * One owner alone takes every slot. `weight`: an owner not among the recent ones (one that is
 * has its own).
 */
export function ownerRoom(owner: string, free: number, reserves: OwnerReserves, weight = 1): number {
  const r = reserves.recent.get(owner)
  const share = r === undefined ? shareOf(reserves.slots, weight, reserves.weights + weight) : fairOf(r, reserves)
  const short = Math.max(0, share - (r?.inFlight ?? 0))
  return Math.max(0, Math.min(free, Math.max(short, free - reservedForOthers(owner, reserves))))
}

/**
 * How many slots each owner gives back after the deliveries they are on, so that the slots kept
 * for others (`ownerRoom`) come free: an owner above its fair share, while fewer slots are free
 * than the others' reserve, gives back the shortfall (at most what it holds above its share).
 * Only those turns end; the owner's other endpoints keep their slots.
 */
export function slotsToGiveBack(free: number, reserves: OwnerReserves): Map<string, number> {
  const out = new Map<string, number>()
  for (const [o, r] of reserves.recent) {
    const above = r.inFlight - fairOf(r, reserves)
    if (above <= 0) continue
    const short = reservedForOthers(o, reserves) - free
    if (short > 0) out.set(o, Math.min(above, short))
  }
  return out
}

/**
 * Deliveries an endpoint's turn keeps its slot for while other endpoints wait for one. A turn
 * keeps its slot while its endpoint has due work (the pipelined lease), so with more ready
 * endpoints than slots the first ones served would hold theirs until their queues emptied, and
 * the rest — of the same owner too — would wait all that time. Each turn given up costs a claim
 * transaction where pipelining cost none: at 16 the bench's default-settings drain lost ~5 %;
 * at 64 an endpoint waits at most ~64 of a turn's cycles (a few seconds) per slot ahead of it.
 */
export const TURN_DELIVERIES_WHILE_OTHERS_WAIT = 64

/**
 * Whether an endpoint's turn gives its slot back after the delivery it is on: when endpoints
 * wait for a slot and this turn has had its share. The claim then takes the earliest ready
 * endpoint — the one waiting longest, since the endpoint given up is ready only from its next
 * due delivery on — so endpoints take turns, `share` deliveries at a time.
 */
export function turnYieldsToWaiting(deliveriesInTurn: number, endpointsWaiting: number, share = TURN_DELIVERIES_WHILE_OTHERS_WAIT): boolean {
  return endpointsWaiting > 0 && deliveriesInTurn >= share
}

/** Endpoints a worker remembers as having given their slot up (the oldest forgotten first). */
export const YIELDED_REMEMBERED = 256

/**
 * A worker's record of turns given up, oldest first: `endpointId` gave its slot up now (moved
 * to the end), `claimed` were claimed again (forgotten). Pure: returns the new order.
 */
export function yieldedAfter(yielded: ReadonlySet<string>, change: { readonly gaveUp?: string; readonly claimed?: readonly string[] }): Set<string> {
  const out = new Set(yielded)
  for (const id of change.claimed ?? []) out.delete(id)
  if (change.gaveUp !== undefined) {
    out.delete(change.gaveUp)
    out.add(change.gaveUp)
  }
  for (const id of out) {
    if (out.size <= YIELDED_REMEMBERED) break
    out.delete(id)
  }
  return out
}
