/**
 * What one entity's own history must look like, checked while `ledger replay` folds it. The
 * fold takes each entry as it comes (a delivery's `attempts` is the number its last counted
 * attempt carries), so a history with entries cut out of its middle can rebuild exactly the
 * live row; these checks are what notice it.
 *
 * The rules are the engine's, not stricter: the delivery state machine of the contract
 * (docs/contract.md, "Delivery state machine"), the entries `decideDelivery`
 * (core/src/delivery/delivery-decider.ts) emits for each outcome and how it numbers attempts, and what
 * `endpointRedeliver` and the endpoint commands append. Each check reports where it failed and
 * carries on from what the entry says, so one cut is reported once, not at every later entry.
 */
import { attemptPayloadOf, type DeliveryRow, type EndpointRow, type LedgerRecord } from '@hookledger/core'

/** One broken rule: the entry (by ledger position) and what is wrong with it. */
export type ReportProblem = (position: string | null, problem: string) => void

/** Where a delivery is in its state machine; `attempted` waits for the attempt's outcome entry. */
type Phase = 'pending' | 'retryable' | 'running' | 'attempted' | 'completed' | 'discarded' | 'retired'

/** The entries that move a delivery, the phases each may follow, and the phase it leads to. */
const TRANSITIONS: Readonly<Record<string, { readonly from: readonly Phase[]; readonly to: Phase }>> = {
  // A claim, a busy-lease snooze and a discard at claim time all take a waiting delivery.
  'delivery.claimed': { from: ['pending', 'retryable'], to: 'running' },
  'delivery.lease_busy': { from: ['pending', 'retryable'], to: 'pending' },
  // The endpoint recovered: a delivery its cool-down held back is due now (no attempt spent).
  'delivery.cool_down_released': { from: ['pending'], to: 'pending' },
  // …and so does `webhooks.delete` (endpoint_deleted); after an attempt, see OUTCOME_ENTRIES.
  'delivery.discarded': { from: ['pending', 'retryable'], to: 'discarded' },
  // Every attempt is made under a claim: a settle, or the rescuer's `interrupted`.
  'delivery.attempted': { from: ['running'], to: 'attempted' },
  'delivery.completed': { from: [], to: 'completed' },
  'delivery.retry_scheduled': { from: [], to: 'retryable' },
  'delivery.snoozed': { from: [], to: 'pending' },
  // `webhooks.redeliver` picks discarded deliveries; `deliveries.redeliver` completed ones too.
  'delivery.redelivered': { from: ['discarded', 'completed'], to: 'pending' },
}

/** The entry `decideDelivery` appends right after an attempt, by the attempt's outcome. */
const OUTCOME_ENTRIES: Readonly<Record<string, readonly string[]>> = {
  completed: ['delivery.completed'],
  retry_scheduled: ['delivery.retry_scheduled'],
  snoozed: ['delivery.snoozed'],
  discarded: ['delivery.discarded'],
  // The rescuer's lost attempt: retried with the backoff, or discarded after the 18th.
  interrupted: ['delivery.retry_scheduled', 'delivery.discarded'],
}

/**
 * Whether an attempt of this outcome spends one of the run's attempts (null: either — an
 * egress refusal or a snooze past the retry window is discarded without spending one).
 */
const OUTCOME_COUNTED: Readonly<Record<string, boolean | null>> = {
  completed: true,
  retry_scheduled: true,
  interrupted: true,
  snoozed: false,
  discarded: null,
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null)

/** The rules of one delivery's history, fed its entries in position order. */
export class DeliveryHistoryCheck {
  readonly #report: ReportProblem
  /** null until `delivery.enqueued`; `false` once the history is known not to start with it. */
  #phase: Phase | null | false = null
  #enqueuedAt = ''
  #endpointId: string | null = null
  #eventId: string | null = null
  #ownerId = ''
  #run = 1
  /** Counted attempts in the current run. */
  #counted = 0
  #attempt: { position: string; outcome: string } | null = null

  constructor(report: ReportProblem) {
    this.#report = report
  }

  start(): void {
    this.#phase = null
    this.#attempt = null
  }

  /**
   * A history that continues from the row a snapshot holds: its state, run and counted
   * attempts are where the entries below the snapshot left them (a transaction's entries never
   * straddle a snapshot, so no attempt waits there for its outcome).
   */
  resume(row: DeliveryRow): void {
    this.#phase = row.state
    this.#attempt = null
    this.#enqueuedAt = 'below the snapshot'
    this.#endpointId = row.endpoint_id
    this.#eventId = row.event_id
    this.#ownerId = row.owner_id
    this.#run = row.run
    this.#counted = row.attempts
  }

  apply(e: LedgerRecord): void {
    if (this.#phase === false) return
    const at = e.position
    // A fan-out's decision keeps the delivery its pair already has (fanout-enqueues.ts).
    if (e.kind === 'delivery.enqueued' && e.payload.by_fanout === true && this.#phase !== null && this.#phase !== 'retired') return
    // A retired delivery's id can start a new life: the same event fanned out to the same
    // endpoint again (it was pruned and published anew), after its first row had left.
    if (this.#phase === null || (this.#phase === 'retired' && e.kind === 'delivery.enqueued')) {
      if (e.kind !== 'delivery.enqueued') {
        this.#report(at, `the history starts with ${e.kind}, not delivery.enqueued`)
        this.#phase = false // nothing later can be judged: the fold never creates the row
        return
      }
      this.#phase = 'pending'
      this.#enqueuedAt = `at position ${at}`
      this.#endpointId = e.endpoint_id
      this.#eventId = e.event_id
      this.#ownerId = e.owner_id
      this.#run = 1
      this.#counted = 0
      return
    }
    // A retirement is one entry about many deliveries (it names none in its columns): it ends
    // a settled history, and nothing but a new enqueue may follow it.
    if (e.kind === 'deliveries.retired') {
      if (this.#phase !== 'completed' && this.#phase !== 'discarded') {
        this.#report(at, `deliveries.retired while the delivery is ${this.#phase}: only a completed or discarded delivery is retired`)
      }
      this.#phase = 'retired'
      this.#attempt = null
      return
    }
    if (this.#phase === 'retired') {
      this.#report(at, `${e.kind} after the delivery was retired`)
      return
    }
    // Every entry about a delivery is made from its row: its endpoint, event and owner.
    if (e.endpoint_id !== this.#endpointId) this.#report(at, `${e.kind} names endpoint ${e.endpoint_id}, the delivery's is ${this.#endpointId}`)
    if (e.event_id !== this.#eventId) this.#report(at, `${e.kind} names event ${e.event_id}, the delivery's is ${this.#eventId}`)
    if (e.owner_id !== this.#ownerId) this.#report(at, `${e.kind} names owner ${e.owner_id}, the delivery's is ${this.#ownerId}`)

    if (e.kind === 'delivery.enqueued') {
      this.#report(at, `delivery.enqueued again (the delivery was enqueued ${this.#enqueuedAt})`)
      return
    }
    // An outcome that came back after its claim was lost: recorded, never applied. It is written
    // without the delivery's row lock, so it may fall anywhere after the claim, even between an
    // attempt and its outcome; it moves nothing.
    if (e.kind === 'delivery.settle_dropped') return
    const t = TRANSITIONS[e.kind]
    if (!t) {
      this.#report(at, `a ${e.kind} entry names this delivery`)
      return
    }
    const phase = this.#phase
    if (phase === 'attempted') {
      const attempt = this.#attempt!
      const expected = OUTCOME_ENTRIES[attempt.outcome] ?? []
      if (!expected.includes(e.kind)) {
        this.#report(
          at,
          `${e.kind} follows the attempt at position ${attempt.position} (outcome ${attempt.outcome}), which ${expected.length ? `is followed by ${expected.join(' or ')}` : 'has no known outcome'}`,
        )
      }
    } else if (!t.from.includes(phase)) {
      this.#report(at, transitionProblem(e.kind, phase))
    }
    this.#attempt = null
    this.#phase = t.to

    if (e.kind === 'delivery.attempted') this.#attempted(e)
    else if (e.kind === 'delivery.redelivered') this.#redelivered(e)
  }

  #attempted(e: Extract<LedgerRecord, { kind: 'delivery.attempted' }>): void {
    const at = e.position
    const p = e.payload as Partial<typeof e.payload>
    const outcome = typeof p.outcome === 'string' ? p.outcome : String(p.outcome)
    this.#attempt = { position: at, outcome }
    if (!(outcome in OUTCOME_ENTRIES)) this.#report(at, `attempt with unknown outcome ${JSON.stringify(p.outcome)}`)
    // Ledger format 2: a 2xx attempt completes the delivery itself; nothing follows it.
    if (p.completes !== undefined) {
      if (p.completes !== true || outcome !== 'completed') this.#report(at, `an attempt with outcome ${outcome} says it completes the delivery (completes: ${JSON.stringify(p.completes)})`)
      else {
        this.#phase = 'completed'
        this.#attempt = null
      }
    }
    // Ledger format 5 leaves out `run: 1` and `counted: true`: read as every reader does.
    const filled: Partial<typeof e.payload> = attemptPayloadOf(e.payload)
    const run = num(filled.run)
    if (run !== this.#run) this.#report(at, `attempt of run ${JSON.stringify(p.run)} during run ${this.#run}`)
    const counted = filled.counted
    if (typeof counted !== 'boolean') {
      this.#report(at, `attempt neither counted nor uncounted (counted: ${JSON.stringify(counted)})`)
      return
    }
    const mustCount = OUTCOME_COUNTED[outcome]
    if (mustCount !== undefined && mustCount !== null && mustCount !== counted) {
      this.#report(at, `a ${counted ? 'counted' : 'uncounted'} attempt with outcome ${outcome}, which is always ${mustCount ? 'counted' : 'uncounted'}`)
    }
    const n = num(p.attempt)
    // decideDelivery numbers a counted attempt one past the run's count, an uncounted one
    // (a snooze, an egress refusal) with the count itself.
    const expected = counted ? this.#counted + 1 : this.#counted
    if (n !== expected) {
      const made = `the run has made ${this.#counted}`
      this.#report(
        at,
        n === null
          ? `attempt number ${JSON.stringify(p.attempt)}`
          : !counted
            ? `uncounted attempt numbered ${n}, ${made}`
            : n > expected
              ? `counted attempt ${n} of run ${this.#run}, ${made}: attempt${n - expected > 1 ? `s ${expected}–${n - 1} are` : ` ${expected} is`} missing`
              : `counted attempt ${n} of run ${this.#run}, ${made}: a number repeats`,
      )
    }
    if (counted) this.#counted = n ?? this.#counted + 1
  }

  #redelivered(e: Extract<LedgerRecord, { kind: 'delivery.redelivered' }>): void {
    const at = e.position
    const p = e.payload as Partial<typeof e.payload>
    if (num(p.run) !== this.#run + 1) this.#report(at, `delivery.redelivered starts run ${JSON.stringify(p.run)}, the next is ${this.#run + 1}`)
    if (num(p.previous_run) !== this.#run) this.#report(at, `delivery.redelivered names previous run ${JSON.stringify(p.previous_run)}, the run was ${this.#run}`)
    if (num(p.previous_attempts) !== this.#counted) {
      this.#report(at, `delivery.redelivered names ${JSON.stringify(p.previous_attempts)} previous attempts, run ${this.#run} made ${this.#counted}`)
    }
    this.#run = num(p.run) ?? this.#run + 1
    this.#counted = 0
  }

  /** The end of the history: an attempt is always appended with its outcome. */
  finish(): void {
    if (this.#phase === 'attempted' && this.#attempt) {
      const expected = OUTCOME_ENTRIES[this.#attempt.outcome] ?? []
      this.#report(this.#attempt.position, `the attempt (outcome ${this.#attempt.outcome}) is the last entry: no ${expected.join(' or ') || 'outcome'} follows it`)
    }
  }
}

function transitionProblem(kind: string, phase: Phase): string {
  switch (kind) {
    case 'delivery.attempted':
      return `delivery.attempted does not follow a delivery.claimed (the delivery is ${phase})`
    case 'delivery.claimed':
      return `delivery.claimed while the delivery is ${phase}: a claim takes a pending or retryable delivery`
    case 'delivery.redelivered':
      return `delivery.redelivered while the delivery is ${phase}: only a completed or discarded delivery is redelivered`
    case 'delivery.completed':
    case 'delivery.retry_scheduled':
    case 'delivery.snoozed':
      return `${kind} without the attempt it is the outcome of (the delivery is ${phase})`
    default:
      return `${kind} while the delivery is ${phase}`
  }
}

/** The rules of one endpoint's history (its endpoint entries and the lease entries naming it). */
export class EndpointHistoryCheck {
  readonly #report: ReportProblem
  #created: string | null | false = null
  #deleted: string | null = null
  #purged: string | null = null

  constructor(report: ReportProblem) {
    this.#report = report
  }

  start(): void {
    this.#created = null
    this.#deleted = null
    this.#purged = null
  }

  /** A history that continues from the row a snapshot holds (created, perhaps deleted, below it). */
  resume(row: EndpointRow): void {
    this.#created = 'below the snapshot'
    this.#deleted = row.deleted_at !== null ? 'below the snapshot' : null
    this.#purged = null
  }

  apply(e: LedgerRecord): void {
    if (this.#created === false) return
    const at = e.position
    if (this.#created === null) {
      if (e.kind !== 'endpoint.created') {
        this.#report(at, `the history starts with ${e.kind}, not endpoint.created`)
        this.#created = false
        return
      }
      this.#created = `at position ${at}`
      return
    }
    if (e.kind === 'endpoint.created') {
      this.#report(at, `endpoint.created again (the endpoint was created ${this.#created})`)
      return
    }
    // A purged endpoint is gone: nothing may name it after its purge.
    if (this.#purged !== null) {
      this.#report(at, `${e.kind} after endpoint.purged (position ${this.#purged})`)
      return
    }
    if (e.kind === 'endpoint.purged') {
      this.#purged = at
      if (this.#deleted === null) this.#report(at, 'endpoint.purged of an endpoint that was never deleted')
      return
    }
    // A deleted endpoint takes no command and no transition (`endpointLock` and
    // `decideEndpointAfterOutcome` skip it); only in-flight attempts still release its lease.
    if (this.#deleted !== null && e.kind.startsWith('endpoint.')) {
      this.#report(at, `${e.kind} after endpoint.deleted (${this.#deleted})`)
    }
    if (e.kind === 'endpoint.deleted' && this.#deleted === null) this.#deleted = `at position ${at}`
  }

  finish(): void {}
}
