/**
 * The three clocks of one attempt, nested so none races another: the HTTP request's deadline
 * ends first, the job timeout (which aborts the request if the transport misbehaves) next, and
 * the lease — after which the rescuer may take the delivery back — last, with room for the
 * settle to commit. A lease no longer than the job timeout would let the rescuer re-send a
 * delivery whose attempt is still running.
 *
 * The lease covers two attempts: the claimed delivery's and the endpoint's next one, which the
 * worker starts the moment the first is answered, before that settle commits (pipelining; the
 * settle then claims it under a fresh lease). So however slow that settle, the second request
 * ends before anyone else may take the endpoint.
 */
export interface AttemptTimeouts {
  readonly httpTimeoutMs: number
  readonly jobTimeoutMs: number
  readonly leaseMs: number
}

/** Time the settle needs after the job timeout, before the lease may expire. */
export const LEASE_MARGIN_MS = 2_000
/** The HTTP deadline when none is set: 10 s, or two thirds of a shorter job timeout. */
export const HTTP_TIMEOUT_DEFAULT_MS = 10_000

/** Thrown with the setting at fault when the timeouts cannot nest. */
export class AttemptTimeoutsError extends Error {
  constructor(
    readonly setting: string,
    message: string,
  ) {
    super(message)
    this.name = 'AttemptTimeoutsError'
  }
}

/** Derives the nesting from the job timeout (and an explicit HTTP timeout), or refuses it. */
export function deriveAttemptTimeouts(input: { jobTimeoutMs: number; httpTimeoutMs?: number | undefined }): AttemptTimeouts {
  const { jobTimeoutMs } = input
  if (!Number.isFinite(jobTimeoutMs) || jobTimeoutMs < 1_000) {
    throw new AttemptTimeoutsError('HOOKLEDGER_JOB_TIMEOUT_SECONDS', `the job timeout must be at least 1 s, got ${jobTimeoutMs} ms`)
  }
  const httpTimeoutMs = input.httpTimeoutMs ?? Math.min(HTTP_TIMEOUT_DEFAULT_MS, Math.floor((jobTimeoutMs * 2) / 3))
  if (!Number.isFinite(httpTimeoutMs) || httpTimeoutMs <= 0) {
    throw new AttemptTimeoutsError('HOOKLEDGER_HTTP_TIMEOUT_SECONDS', `the HTTP timeout must be positive, got ${httpTimeoutMs} ms`)
  }
  if (httpTimeoutMs >= jobTimeoutMs) {
    throw new AttemptTimeoutsError(
      'HOOKLEDGER_HTTP_TIMEOUT_SECONDS',
      `the HTTP timeout (${httpTimeoutMs / 1000} s) must be shorter than the job timeout (${jobTimeoutMs / 1000} s, HOOKLEDGER_JOB_TIMEOUT_SECONDS)`,
    )
  }
  return { httpTimeoutMs, jobTimeoutMs, leaseMs: 2 * jobTimeoutMs + LEASE_MARGIN_MS }
}

/**
 * Whether the endpoint's next delivery may be sent now, before the settle of the one just
 * answered commits: only after a 2xx (a failing or throttling receiver gets no second request
 * until its outcome is recorded and the usual rules have run), and only while the lease taken
 * for the answered one still covers a whole attempt and the settle's margin — so the request
 * ends before the rescuer or another worker could take the endpoint, whatever the database does.
 */
export function pipelinedSendAllowed(input: { answeredCompleted: boolean; leaseUntil: Date; now: Date; jobTimeoutMs: number }): boolean {
  if (!input.answeredCompleted) return false
  return input.leaseUntil.getTime() - input.now.getTime() >= input.jobTimeoutMs + LEASE_MARGIN_MS
}

/**
 * Whether a claim still holds enough lease to make its attempt: the job timeout must end before
 * the lease does, or the rescuer could take the delivery back and send it again while this
 * attempt still runs. A claim whose answer came back late (a slow or partitioned database) may
 * not; then it is not sent at all and the rescuer retries it. When the lease is no longer than
 * the job timeout (tests), only an expired lease is too short.
 */
export function leaseLeftToSend(input: { leaseUntil: Date; now: Date; jobTimeoutMs: number; leaseMs: number }): { send: boolean; leftMs: number } {
  const leftMs = input.leaseUntil.getTime() - input.now.getTime()
  const needMs = input.leaseMs > input.jobTimeoutMs ? input.jobTimeoutMs : 0
  return { send: leftMs > needMs, leftMs }
}
