import { pipelinedSendAllowed, rateAllows, settleWaitMs, type Clock } from '@hookledger/core'
import type { ClaimedDelivery, Settlement } from '@hookledger/store'
import type { SettleBatcher } from './settle-batcher.js'

/** What one endpoint's turn needs from its dispatcher. */
export interface EndpointTurnDeps {
  readonly clock: Clock
  readonly jobTimeoutMs: number
  /** `worker:<id>`: whose lease an answer the settle could not claim was sent under. */
  readonly actor: string
  readonly settler: SettleBatcher
  /** Starts one attempt (the dispatcher tracks it until answered). */
  readonly post: (claim: ClaimedDelivery) => Promise<Settlement>
  /**
   * Whether the turn goes on after the delivery just answered (the turn's `deliveries`th): false
   * once the dispatcher is stopping, when its owner gives this slot back (fair share), or when
   * the turn has had its share while other endpoints wait for a slot. Asked once per delivery.
   */
  readonly running: (deliveries: number) => boolean
}

/**
 * One endpoint's turn in a slot: POST, settle, and on to the next due delivery the settle
 * claimed for it, until it has none. After a 2xx the delivery after it (read by the claim) is
 * sent at once, beside the settle, which claims it — so an endpoint's cycle is the longer of
 * its POST and its settle, not their sum. Still one request in flight per endpoint: the next
 * starts only when the one before has answered.
 */
export async function endpointTurn(first: ClaimedDelivery, deps: EndpointTurnDeps): Promise<void> {
  let current = first
  let posting = deps.post(first)
  for (let answered = 1; ; answered++) {
    const settlement = await posting
    const goOn = deps.running(answered)
    const ahead = goOn ? sendAhead(current, settlement, deps) : null
    // With the next request already out, the settle may wait for company (core settleWaitMs).
    const waitMs = settleWaitMs({ sentAhead: ahead !== null, answeredInMs: settlement.result?.durationMs })
    const next = await deps.settler.add(settlement, { chain: goOn, following: current.following, started: ahead !== null, waitMs })
    if (ahead && next?.delivery.id === ahead.claim.delivery.id) {
      current = next
      posting = ahead.posting.then((s) => ({ ...s, delivery: next.delivery, endpoint: next.endpoint }))
      continue
    }
    if (ahead) {
      // Its claim did not hold (the endpoint was disabled or deleted meanwhile): the answer
      // is still recorded, as settle_dropped, under the lease it was sent in.
      const { endpoint: _unclaimed, ...sent } = await ahead.posting
      await deps.settler.add({ ...sent, delivery: { ...sent.delivery, claimed_by: deps.actor, lease_until: current.delivery.lease_until } })
      return
    }
    if (!next) return
    current = next
    posting = deps.post(next)
  }
}

/**
 * Sends the endpoint's following delivery now, if the answer and the lease allow (core
 * `pipelinedSendAllowed`) and so does its rate limit's bucket as the last claim left it (else
 * the settle's claim paces it like any other: nothing is sent ahead of the bucket).
 */
function sendAhead(current: ClaimedDelivery, answered: Settlement, deps: EndpointTurnDeps): { claim: ClaimedDelivery; posting: Promise<Settlement> } | null {
  if (!current.following) return null
  const now = deps.clock.now()
  const allowed = pipelinedSendAllowed({
    answeredCompleted: answered.outcome.type === 'completed',
    leaseUntil: current.delivery.lease_until!,
    now,
    jobTimeoutMs: deps.jobTimeoutMs,
  })
  if (!allowed || !rateAllows(current.endpoint, now)) return null
  const claim: ClaimedDelivery = { delivery: current.following.delivery, endpoint: current.endpoint, event: current.following.event }
  return { claim, posting: deps.post(claim) }
}
