/**
 * Event-type names and the globs endpoints subscribe with (SPEC §3).
 *
 * Matching is segment-wise over the dot-separated type and never builds a RegExp from user
 * input, so a hostile glob cannot cause catastrophic backtracking: the matcher is
 * O(glob segments × type segments) and both are bounded by `EVENT_NAME_MAX_LENGTH`.
 */

/** Longest event type or glob accepted; bounds the matcher's work and the stored column. */
export const EVENT_NAME_MAX_LENGTH = 200

const SEGMENT = /^[A-Za-z0-9_]+$/

/**
 * True when `type` is a well-formed event type: one or more dot-separated segments of
 * `[A-Za-z0-9_]+`, e.g. `booking.created` or `microsite.store.doc_inserted`.
 */
export function isValidEventType(type: string): boolean {
  if (typeof type !== 'string' || type.length === 0 || type.length > EVENT_NAME_MAX_LENGTH) {
    return false
  }
  return type.split('.').every((segment) => SEGMENT.test(segment))
}

/**
 * True when `glob` is a well-formed subscription glob: dot-separated segments, each a literal
 * `[A-Za-z0-9_]+`, `*` (exactly one segment) or `**` (one or more segments). `*` alone is the
 * catch-all. Partial wildcards such as `book*` are refused rather than guessed at.
 */
export function isValidGlob(glob: string): boolean {
  if (typeof glob !== 'string' || glob.length === 0 || glob.length > EVENT_NAME_MAX_LENGTH) {
    return false
  }
  return glob
    .split('.')
    .every((segment) => segment === '*' || segment === '**' || SEGMENT.test(segment))
}

/**
 * Does `glob` match the event `type`?
 *
 * - `*` alone matches every type;
 * - inside a dotted glob `*` matches exactly one segment (`booking.*` matches `booking.created`,
 *   not `booking` nor `booking.a.b`);
 * - `**` matches one or more segments (`booking.**` matches `booking.created` and
 *   `booking.a.b`, not `booking`);
 * - literal segments match exactly (case-sensitive).
 *
 * An invalid glob or type matches nothing, so a corrupt stored glob fails closed.
 */
export function matchesEventType(glob: string, type: string): boolean {
  if (!isValidGlob(glob) || !isValidEventType(type)) return false
  if (glob === '*') return true
  return matchSegments(glob.split('.'), type.split('.'))
}

/** True when at least one of `globs` matches `type` (an empty list matches nothing). */
export function matchesAny(globs: readonly string[], type: string): boolean {
  return globs.some((glob) => matchesEventType(glob, type))
}

/**
 * Dynamic programming over segments instead of backtracking, so several `**` in one glob stay
 * linear in the product of the lengths.
 */
function matchSegments(pattern: readonly string[], segments: readonly string[]): boolean {
  const n = segments.length
  // reachable[j]: the pattern consumed so far matches exactly the first j segments.
  let reachable: boolean[] = Array.from({ length: n + 1 }, (_, j) => j === 0)
  for (const token of pattern) {
    const next: boolean[] = new Array<boolean>(n + 1).fill(false)
    if (token === '**') {
      let seen = false
      for (let j = 1; j <= n; j++) {
        seen = seen || reachable[j - 1] === true
        next[j] = seen
      }
    } else {
      for (let j = 1; j <= n; j++) {
        next[j] = reachable[j - 1] === true && (token === '*' || token === segments[j - 1])
      }
    }
    reachable = next
  }
  return reachable[n] === true
}
