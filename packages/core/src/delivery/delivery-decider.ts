/**
 * The delivery state machine (SPEC §5, the seed's "One delivery" diagram) as pure functions:
 * an attempt's result becomes a named outcome, and an outcome becomes the ledger entries to
 * append. Nothing here reads a clock; `now` is always passed in.
 */
import type { AttemptResult } from './attempt-result.js'
import {
  MAX_ATTEMPTS,
  RETRY_AFTER_CAP_MS,
  RETRY_WINDOW_MS,
  backoffAfterAttempt,
  parseRetryAfter,
} from './backoff.js'
import { iso, type Actor, type DiscardReason, type LedgerEntry, type LedgerEntryOf } from '../model/ledger-entry.js'
import type { DeliveryRow } from '../model/projections.js'
import { attemptPayloadWritten } from '../model/ledger-format.js'

/** Busy endpoint: try again this much later, without spending an attempt. */
export const BUSY_SNOOZE_MS = 2_000
/**
 * The shortest Retry-After snooze: a receiver answering `Retry-After: 0` (or a past date) is
 * retried this much later, never in a tight loop that spends no attempts.
 */
export const RETRY_AFTER_FLOOR_MS = 2_000
/**
 * How much a receiver may postpone one delivery's run with Retry-After before its answers start
 * spending attempts: a count and a total delay. Past either, a 429/503 with Retry-After is a
 * counted failure that waits the longer of the backoff and the asked delay, so a receiver
 * answering `Retry-After: 0` forever costs 50 quick requests and then the usual 18, not one
 * request every 2 s for 5.3 days.
 */
export interface SnoozeBudget {
  readonly maxCount: number
  readonly maxTotalMs: number
}
export const SNOOZE_BUDGET_DEFAULT: SnoozeBudget = Object.freeze({ maxCount: 50, maxTotalMs: 24 * 3_600_000 })

/** Whether the run has used up its snoozes. */
export function snoozeBudgetSpent(delivery: Pick<DeliveryRow, 'snoozes' | 'snoozed_ms'>, budget: SnoozeBudget): boolean {
  return delivery.snoozes >= budget.maxCount || delivery.snoozed_ms >= budget.maxTotalMs
}

/** While an endpoint is failing, new deliveries wait this long before their first attempt. */
export const COOL_DOWN_MS = 5 * 60_000
/** A claimed delivery's lease; also the job timeout after which a lost attempt is rescued. */
export const JOB_TIMEOUT_MS = 15_000

/** What one HTTP attempt looked like, as recorded in the attempt history. */
export interface AttemptFacts {
  readonly started_at: Date
  readonly duration_ms: number
  readonly status_code: number | null
  readonly error: string | null
  readonly signed_with: readonly string[]
  readonly address?: string | null
  readonly response_excerpt?: string
  /** The receiver's response headers as kept (`keptResponseHeaders`); absent when none. */
  readonly response_headers?: Readonly<Record<string, string>>
  /** The answer's body was longer than the excerpt. */
  readonly response_truncated?: boolean
}

/** The named outcomes of a claim. Build them only with the constructors of `DeliveryOutcome`. */
export type DeliveryOutcome =
  | { readonly type: 'completed'; readonly attempt: AttemptFacts }
  | {
      readonly type: 'retry_scheduled'
      readonly attempt: AttemptFacts
      readonly backoff_ms: number
    }
  | { readonly type: 'snoozed_busy' }
  | {
      readonly type: 'snoozed_retry_after'
      readonly attempt: AttemptFacts
      readonly retry_after_ms: number
    }
  | {
      readonly type: 'discarded'
      readonly reason: DiscardReason
      /** The attempt that led here, if one was made. */
      readonly attempt: AttemptFacts | null
      /** Whether that attempt spends one of the 18 (HTTP answers do; a refused egress does not). */
      readonly counted: boolean
      readonly detail?: string
    }
  | { readonly type: 'interrupted'; readonly attempt: AttemptFacts }

/** Constructors: the only way outcomes are made. */
export const DeliveryOutcome = Object.freeze({
  completed: (attempt: AttemptFacts): DeliveryOutcome => ({ type: 'completed', attempt }),
  retryScheduled: (attempt: AttemptFacts, backoffMs: number): DeliveryOutcome => ({
    type: 'retry_scheduled',
    attempt,
    backoff_ms: backoffMs,
  }),
  snoozedForBusy: (): DeliveryOutcome => ({ type: 'snoozed_busy' }),
  snoozedForRetryAfter: (attempt: AttemptFacts, retryAfterMs: number): DeliveryOutcome => ({
    type: 'snoozed_retry_after',
    attempt,
    retry_after_ms: Math.min(Math.max(RETRY_AFTER_FLOOR_MS, retryAfterMs), RETRY_AFTER_CAP_MS),
  }),
  discarded: (
    reason: DiscardReason,
    attempt: AttemptFacts | null = null,
    options: { counted?: boolean; detail?: string } = {},
  ): DeliveryOutcome => ({
    type: 'discarded',
    reason,
    attempt,
    counted: options.counted ?? attempt !== null,
    ...(options.detail !== undefined ? { detail: options.detail } : {}),
  }),
  interrupted: (attempt: AttemptFacts): DeliveryOutcome => ({ type: 'interrupted', attempt }),
})

/** Whether the delivery's run is older than the whole retry schedule (snoozes stop there). */
export function pastRetryWindow(delivery: Pick<DeliveryRow, 'run_started_at'>, now: Date): boolean {
  return now.getTime() - delivery.run_started_at.getTime() > RETRY_WINDOW_MS
}

/**
 * A failed, counted attempt: retried after the backoff (or `atLeastMs`, the delay a receiver
 * asked for once its snoozes are spent, if longer), or discarded after the 18th.
 */
function failedAttempt(attemptNo: number, facts: AttemptFacts, atLeastMs = 0): DeliveryOutcome {
  return attemptNo >= MAX_ATTEMPTS
    ? DeliveryOutcome.discarded('max_attempts', facts)
    : DeliveryOutcome.retryScheduled(facts, Math.max(backoffAfterAttempt(attemptNo), atLeastMs))
}

/**
 * SPEC §5's table: what an attempt's result means for the delivery.
 *
 * - 2xx → completed
 * - 429/503 with a Retry-After → snoozed (no attempt spent) for the asked delay, at least 2 s
 *   (a value of 0, negative or unparseable takes that floor) and capped at 1 h, unless the run
 *   is past the retry window; once the run's snooze budget is spent, a counted failure instead
 * - 5xx, 408, 429/503 without Retry-After, 3xx left unfollowed, timeout, connection failure, too
 *   many redirects → retry (or discard after attempt 18)
 * - other 4xx → discarded; egress refused → discarded without spending an attempt
 * - a redirect to another origin (not followed: the signed headers stay with the endpoint's
 *   origin) → discarded, `redirect_cross_origin`, with the 3xx and its Location
 * - any redirect of an endpoint with `follow_redirects: "none"` → discarded,
 *   `redirect_not_followed`, with the 3xx and its Location
 */
export function classifyAttempt(
  delivery: Pick<DeliveryRow, 'attempts' | 'run_started_at' | 'snoozes' | 'snoozed_ms'>,
  result: AttemptResult,
  facts: AttemptFacts,
  now: Date,
  budget: SnoozeBudget = SNOOZE_BUDGET_DEFAULT,
): DeliveryOutcome {
  const attemptNo = delivery.attempts + 1
  switch (result.kind) {
    case 'egress_blocked':
      return DeliveryOutcome.discarded('egress_blocked', facts, {
        counted: false,
        detail: `${result.address} (${result.url})`,
      })
    case 'timeout':
    case 'connection_error':
    case 'too_many_redirects':
      return failedAttempt(attemptNo, facts)
    case 'response': {
      const s = result.status
      // The receiver sent us elsewhere, to an origin the signed request may not follow to, or
      // the endpoint follows no redirect at all: no retry can change that (a new attempt gets
      // the same answer), so it is said and discarded.
      if (result.redirectRefused) {
        const { location, reason } = result.redirectRefused
        const detail = `${s} → ${location}`
        if (reason === 'cross_origin') return DeliveryOutcome.discarded('redirect_cross_origin', facts, { detail })
        const error = `redirect_not_followed: HTTP ${s} to ${location} (the endpoint's follow_redirects is "none")`
        return DeliveryOutcome.discarded('redirect_not_followed', { ...facts, error }, { detail })
      }
      if (s >= 200 && s < 300) return DeliveryOutcome.completed(facts)
      if (s === 429 || s === 503) {
        if (result.retryAfter === null || result.retryAfter.trim() === '') return failedAttempt(attemptNo, facts)
        // Garbage is read as "now": it takes the floor and spends the budget like a 0.
        const asked = Math.min(parseRetryAfter(result.retryAfter, now) ?? 0, RETRY_AFTER_CAP_MS)
        if (snoozeBudgetSpent(delivery, budget)) return failedAttempt(attemptNo, facts, asked)
        if (pastRetryWindow(delivery, now)) {
          return DeliveryOutcome.discarded('retry_window_exceeded', facts, { counted: false })
        }
        return DeliveryOutcome.snoozedForRetryAfter(facts, asked)
      }
      if (s >= 500 || s === 408 || (s >= 300 && s < 400)) return failedAttempt(attemptNo, facts)
      return DeliveryOutcome.discarded('http_status', facts, { detail: String(s) })
    }
  }
}

/** Context of one decision. */
export interface DecisionContext {
  readonly now: Date
  readonly actor: Actor
}

/** The fields every entry about one delivery carries. */
export function deliveryEntryBase(delivery: Pick<DeliveryRow, 'id' | 'owner_id' | 'endpoint_id' | 'event_id'>, ctx: DecisionContext) {
  return {
    occurred_at: ctx.now,
    owner_id: delivery.owner_id,
    endpoint_id: delivery.endpoint_id,
    delivery_id: delivery.id,
    event_id: delivery.event_id,
    actor: ctx.actor,
  }
}

/**
 * The ledger entries a claim's outcome appends for the delivery (endpoint effects are
 * `decideEndpointAfterOutcome`'s). The delivery must be `running` (claimed) for attempt
 * outcomes; a busy snooze or a discard-on-claim applies to the claimed row as well.
 */
export function decideDelivery(
  delivery: DeliveryRow,
  outcome: DeliveryOutcome,
  ctx: DecisionContext,
): LedgerEntry[] {
  const { now } = ctx
  const base = deliveryEntryBase(delivery, ctx)
  const attempted = (facts: AttemptFacts, counted: boolean, outcomeName: string): LedgerEntry => ({
    ...base,
    kind: 'delivery.attempted',
    // Ledger format 5: `counted: true`, `run: 1` and `error: null` are left out (ledger-format.ts).
    payload: attemptPayloadWritten({
      attempt: counted ? delivery.attempts + 1 : delivery.attempts,
      counted,
      run: delivery.run,
      started_at: iso(facts.started_at),
      duration_ms: Math.max(0, Math.round(facts.duration_ms)),
      status_code: facts.status_code,
      error: facts.error,
      outcome: outcomeName as never,
      signed_with: [...facts.signed_with],
      ...(facts.address !== undefined ? { address: facts.address } : {}),
      ...(facts.response_excerpt ? { response_excerpt: facts.response_excerpt } : {}),
      ...(facts.response_headers && Object.keys(facts.response_headers).length > 0
        ? { response_headers: { ...facts.response_headers } }
        : {}),
      ...(facts.response_truncated ? { response_truncated: true } : {}),
    }),
  })
  const at = (ms: number) => iso(new Date(now.getTime() + ms))

  switch (outcome.type) {
    case 'completed': {
      // Ledger format 2: the attempt is the outcome (one entry where format 1 wrote two).
      const entry = attempted(outcome.attempt, true, 'completed') as LedgerEntryOf<'delivery.attempted'>
      return [{ ...entry, payload: { ...entry.payload, completes: true } }]
    }
    case 'retry_scheduled':
      return [
        attempted(outcome.attempt, true, 'retry_scheduled'),
        {
          ...base,
          kind: 'delivery.retry_scheduled',
          payload: { next_attempt_at: at(outcome.backoff_ms), backoff_ms: outcome.backoff_ms },
        },
      ]
    case 'snoozed_busy':
      if (pastRetryWindow(delivery, now)) {
        return [{ ...base, kind: 'delivery.discarded', payload: { reason: 'retry_window_exceeded' } }]
      }
      return [
        { ...base, kind: 'delivery.lease_busy', payload: { next_attempt_at: at(BUSY_SNOOZE_MS) } },
      ]
    case 'snoozed_retry_after':
      return [
        attempted(outcome.attempt, false, 'snoozed'),
        {
          ...base,
          kind: 'delivery.snoozed',
          payload: { next_attempt_at: at(outcome.retry_after_ms), retry_after_ms: outcome.retry_after_ms },
        },
      ]
    case 'discarded': {
      const discarded: LedgerEntry = {
        ...base,
        kind: 'delivery.discarded',
        payload: {
          reason: outcome.reason,
          ...(outcome.detail !== undefined ? { detail: outcome.detail } : {}),
        },
      }
      return outcome.attempt
        ? [attempted(outcome.attempt, outcome.counted, 'discarded'), discarded]
        : [discarded]
    }
    case 'interrupted': {
      const attemptNo = delivery.attempts + 1
      const next = failedAttempt(attemptNo, outcome.attempt)
      const tail =
        next.type === 'retry_scheduled'
          ? ({
              ...base,
              kind: 'delivery.retry_scheduled',
              payload: { next_attempt_at: at(next.backoff_ms), backoff_ms: next.backoff_ms },
            } as const)
          : ({ ...base, kind: 'delivery.discarded', payload: { reason: 'max_attempts' } } as const)
      return [attempted(outcome.attempt, true, 'interrupted'), tail]
    }
  }
}

/** Whether an outcome reached the receiver and failed (it counts against the endpoint). */
export function isEndpointFailure(outcome: DeliveryOutcome): boolean {
  switch (outcome.type) {
    case 'retry_scheduled':
    case 'snoozed_retry_after':
      return true
    case 'discarded':
      return outcome.attempt !== null
    default:
      return false
  }
}

/**
 * The entry for an outcome that cannot be applied because the claim it was made under is gone
 * (the rescuer took the delivery back after its lease): the projection is left alone, the
 * ledger keeps what the receiver answered.
 */
export function settleDroppedEntry(
  delivery: Pick<DeliveryRow, 'id' | 'owner_id' | 'endpoint_id' | 'event_id' | 'claimed_by' | 'lease_until'>,
  outcome: DeliveryOutcome,
  ctx: DecisionContext,
): LedgerEntryOf<'delivery.settle_dropped'> {
  const attempt = 'attempt' in outcome ? outcome.attempt : null
  return {
    kind: 'delivery.settle_dropped',
    ...deliveryEntryBase(delivery, ctx),
    payload: {
      worker: ctx.actor,
      claimed_by: delivery.claimed_by ?? '',
      lease_until: delivery.lease_until ? iso(delivery.lease_until) : '',
      outcome: outcome.type,
      started_at: attempt ? iso(attempt.started_at) : null,
      duration_ms: attempt ? attempt.duration_ms : null,
      status_code: attempt ? attempt.status_code : null,
      error: attempt ? attempt.error : null,
    },
  }
}
