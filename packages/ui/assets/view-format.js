// @ts-check
// Pure formatting the screens share: no DOM, no fetch, so a unit test runs it in Node
// (packages/ui/src/view-format.unit.spec.ts).

/** The service's bounds on a Retry-After snooze (core's RETRY_AFTER_FLOOR_MS, RETRY_AFTER_CAP_MS). */
export const SNOOZE_FLOOR_MS = 2_000
export const SNOOZE_CAP_MS = 3_600_000

/**
 * How long a snooze postponed the delivery: the receiver's `Retry-After` (seconds, or an
 * HTTP-date read against the attempt's start) held to the service's 2 s – 1 h, as the service
 * held it. Null when the answer's headers did not keep one.
 * @param {{ started_at: string, response: { headers: Record<string, string> } | null }} attempt
 * @returns {number | null}
 */
export function snoozeWaitMs(attempt) {
  const value = attempt.response?.headers['retry-after']?.trim()
  if (!value) return null
  let ms
  if (/^\d+$/.test(value)) ms = Number(value) * 1000
  else if (/^-\d+$/.test(value)) ms = 0
  else {
    const at = Date.parse(value)
    if (Number.isNaN(at)) ms = 0 // the service reads garbage as "now", so it takes the floor
    else ms = at - Date.parse(attempt.started_at)
  }
  return Math.min(Math.max(ms, SNOOZE_FLOOR_MS), SNOOZE_CAP_MS)
}

/**
 * A delay for people: `7 s`, `1 min 30 s`, `2 h 5 min`; whole seconds (a snooze is at least 2 s).
 * @param {number} ms
 */
export function humanDuration(ms) {
  const s = Math.round(ms / 1000)
  if (s < 60) return `${s} s`
  const h = Math.floor(s / 3600)
  const min = Math.floor((s % 3600) / 60)
  const sec = s % 60
  if (h > 0) return min > 0 ? `${h} h ${min} min` : `${h} h`
  return sec > 0 ? `${min} min ${sec} s` : `${min} min`
}

/** @param {number} n */
const two = (n) => String(n).padStart(2, '0')

/**
 * An ISO time as a `datetime-local` value (the reader's local time, to the minute); '' for
 * none or garbage.
 * @param {string | null | undefined} iso
 */
export function isoToLocalInput(iso) {
  const t = iso ? new Date(iso) : null
  if (!t || Number.isNaN(t.getTime())) return ''
  return `${t.getFullYear()}-${two(t.getMonth() + 1)}-${two(t.getDate())}T${two(t.getHours())}:${two(t.getMinutes())}`
}

/**
 * A `datetime-local` (or `date`) value, read as the reader's local time, as the API's ISO time;
 * null for an empty or unreadable value.
 * @param {string} value
 */
export function localInputToIso(value) {
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2}))?)?$/.exec(value.trim())
  if (!m) return null
  const [y, mo, d, hh = '0', mm = '0', ss = '0'] = m.slice(1)
  const t = new Date(Number(y), Number(mo) - 1, Number(d), Number(hh), Number(mm), Number(ss))
  // new Date() rolls 2024-02-31 over into March: a date that moved was not a date.
  if (Number.isNaN(t.getTime()) || t.getDate() !== Number(d) || t.getMonth() !== Number(mo) - 1) return null
  return t.toISOString()
}

/**
 * What people call an endpoint: its description, else its URL.
 * @param {{ url: string, description: string }} endpoint
 */
export const endpointName = (endpoint) => endpoint.description.trim() || endpoint.url

/**
 * Retry-After snoozes in words, beside the attempts: `1 snooze (7 s)`; null for none.
 * @param {{ snoozes: number, snoozed_ms: number }} delivery
 */
export function snoozeSummary({ snoozes, snoozed_ms }) {
  if (!snoozes) return null
  return `${snoozes} ${snoozes === 1 ? 'snooze' : 'snoozes'} (${humanDuration(snoozed_ms)})`
}
