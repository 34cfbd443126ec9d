/**
 * Retry timing (SPEC §5): the backoff schedule between attempts and the receiver's
 * `Retry-After` hint. Pure arithmetic on milliseconds; "now" is always passed in.
 */

const SECOND = 1_000
const MINUTE = 60 * SECOND
const HOUR = 60 * MINUTE

/** The first five gaps: 5 s, 5 min, 30 min, 2 h, 5 h. */
export const RETRY_SCHEDULE_MS: readonly number[] = Object.freeze([
  5 * SECOND,
  5 * MINUTE,
  30 * MINUTE,
  2 * HOUR,
  5 * HOUR,
])

/** Every gap after the scheduled ones. */
export const LATER_RETRY_GAP_MS = 10 * HOUR

/** Attempts a delivery gets; when attempt 18 fails the delivery is discarded. */
export const MAX_ATTEMPTS = 18

/**
 * Delay before the next attempt once attempt `n` (1-based) failed. Defined for every n ≥ 1
 * (10 h past the schedule); deciding that attempt `MAX_ATTEMPTS` was the last is the caller's
 * job. Throws a RangeError for n < 1 or a non-integer, which would be a counting bug.
 */
export function backoffAfterAttempt(n: number): number {
  if (!Number.isInteger(n) || n < 1) {
    throw new RangeError(`attempt number must be an integer ≥ 1, got ${n}`)
  }
  return RETRY_SCHEDULE_MS[n - 1] ?? LATER_RETRY_GAP_MS
}

/**
 * Sum of the 17 gaps between attempt 1 and attempt 18: 127 h 35 min 5 s (≈ 5.3 days). A delivery
 * older than this is discarded at its next non-success instead of being snoozed again.
 */
export const RETRY_WINDOW_MS = Array.from({ length: MAX_ATTEMPTS - 1 }, (_, i) =>
  backoffAfterAttempt(i + 1),
).reduce((sum, gap) => sum + gap, 0)

/** The most a `Retry-After` snooze may defer one attempt (1 h). */
export const RETRY_AFTER_CAP_MS = 3_600_000

// Longer values are not a Retry-After any server sends; refusing them bounds the parsing work.
const RETRY_AFTER_MAX_LENGTH = 64

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']
const MONTH = `(${MONTHS.join('|')})`
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})'
/** IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`. */
const IMF_FIXDATE = new RegExp(
  `^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`,
)
const LONG_DAY = '(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)'
/** Obsolete RFC 850: `Sunday, 06-Nov-94 08:49:37 GMT`. */
const RFC_850 = new RegExp(`^${LONG_DAY}, (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`)
/** Obsolete asctime: `Sun Nov  6 08:49:37 1994` (UTC, although it names no zone). */
const ASCTIME = new RegExp(
  `^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ${MONTH} ([ \\d]\\d) ${TIME} (\\d{4})$`,
)

/**
 * The delay in ms a `Retry-After` header value asks for, measured from `now`:
 * - delta-seconds (`120`) → 120 000; a negative integer (`-5`, outside the grammar but sent by
 *   some servers) → 0;
 * - an HTTP-date in IMF-fixdate, RFC 850 or asctime form (RFC 9110 §5.6.7), always read as
 *   UTC → the time until it, 0 when it is past;
 * - `null` when absent, empty or anything else (a fraction, garbage, an impossible date).
 *
 * Parsed by hand rather than with `Date.parse`, which accepts nearly anything (`"1"` is the year
 * 2001) and reads asctime in local time. Not capped: see `cappedRetryAfter`.
 */
export function parseRetryAfter(value: string | null | undefined, now: Date): number | null {
  if (typeof value !== 'string') return null
  const trimmed = value.trim()
  if (trimmed.length === 0 || trimmed.length > RETRY_AFTER_MAX_LENGTH) return null
  if (/^\d+$/.test(trimmed)) {
    return Math.min(Number(trimmed) * SECOND, Number.MAX_SAFE_INTEGER)
  }
  if (/^-\d+$/.test(trimmed)) return 0
  const at = parseHttpDate(trimmed, now)
  if (at === null || Number.isNaN(now.getTime())) return null
  return Math.max(0, at - now.getTime())
}

/** `parseRetryAfter` limited to `RETRY_AFTER_CAP_MS`; `null` stays `null`. */
export function cappedRetryAfter(value: string | null | undefined, now: Date): number | null {
  const delay = parseRetryAfter(value, now)
  return delay === null ? null : Math.min(delay, RETRY_AFTER_CAP_MS)
}

/** Epoch ms of an HTTP-date, or null. `now` resolves RFC 850's two-digit year. */
function parseHttpDate(value: string, now: Date): number | null {
  let match = IMF_FIXDATE.exec(value)
  if (match !== null) {
    const [, day, month, year, hh, mm, ss] = match
    return utc(Number(year), month, Number(day), hh, mm, ss)
  }
  match = RFC_850.exec(value)
  if (match !== null) {
    const [, day, month, yy, hh, mm, ss] = match
    // RFC 9110: a two-digit year more than 50 years ahead means the previous century.
    const nowYear = now.getUTCFullYear()
    let year = Math.floor(nowYear / 100) * 100 + Number(yy)
    if (year > nowYear + 50) year -= 100
    return utc(year, month, Number(day), hh, mm, ss)
  }
  match = ASCTIME.exec(value)
  if (match !== null) {
    const [, month, day, hh, mm, ss, year] = match
    return utc(Number(year), month, Number(day?.trim()), hh, mm, ss)
  }
  return null
}

function utc(
  year: number,
  monthName: string | undefined,
  day: number,
  hh: string | undefined,
  mm: string | undefined,
  ss: string | undefined,
): number | null {
  const month = MONTHS.indexOf(monthName ?? '')
  const [hour, minute, second] = [Number(hh), Number(mm), Number(ss)]
  if (month < 0 || !Number.isInteger(year) || hour > 23 || minute > 59 || second > 60) return null
  // A leap second (:60) is read as :59 instead of rolling into the next minute.
  const date = new Date(Date.UTC(year, month, day, hour, minute, Math.min(second, 59)))
  // Date.UTC rolls 31 Feb into March; an impossible calendar date is refused instead.
  if (Number.isNaN(date.getTime()) || date.getUTCDate() !== day || date.getUTCMonth() !== month) {
    return null
  }
  return date.getTime()
}
