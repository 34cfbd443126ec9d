/**
 * Scope rules (SPEC §4, seed "Scope: one decision, raw never leaves"). Everything here is pure:
 * the I/O layer asks the embed scope port and passes its boolean in.
 */

/** The only event type that needs a scope decision. */
export const CORPUS_NOTE_CHANGED = 'corpus.note.changed'

/** Longest subject the ACL will reason about; longer ones are refused (fails closed). */
export const SUBJECT_MAX_LENGTH = 2048

/** Longest subject glob accepted; bounds the matcher's work. */
export const SUBJECT_GLOB_MAX_LENGTH = 1024

/** The minimal event shape the scope rules read. */
export interface ScopedEvent {
  readonly type: string
  readonly subject: string
  readonly data: unknown
}

/**
 * True for subjects in the `raw://` space, which never leave the instance. The scheme is
 * compared case-insensitively and leading whitespace ignored (URI schemes are
 * case-insensitive, and refusing too much here is cheap while leaking is not).
 */
export function isRawSubject(subject: string): boolean {
  return /^\s*raw:\/\//i.test(subject)
}

/**
 * The standalone rule (endpoint without an embed). For `corpus.note.changed` the note must be
 * published or have been published just before (`data.published === true ||
 * data.was_published === true`), so un-publishing is heard too. Every other type is admitted,
 * except that a `raw://` subject is refused whatever the type: the seed states the raw rule
 * for the corpus, but nothing in the raw space should leave under any type.
 */
export function standaloneAdmits(event: ScopedEvent): boolean {
  if (isRawSubject(event.subject)) return false
  if (event.type !== CORPUS_NOTE_CHANGED) return true
  return publishedSliceAdmits(event.data)
}

/** Reads the two flags as strict booleans; `"true"` or `1` do not count (fails closed). */
export function publishedSliceAdmits(data: unknown): boolean {
  return readFlag(data, 'published') || readFlag(data, 'was_published')
}

/** The scope-relevant part of an access code (seed: role globs minus deny globs). */
export interface AccessCode {
  readonly role_globs: readonly string[]
  readonly deny_globs: readonly string[]
  /** The role reads only the published slice, so `published || was_published` is required. */
  readonly reads_published_slice: boolean
  readonly revoked_at: Date | null
  readonly expires_at: Date | null
}

/** What the ACL needs to know about one corpus note. */
export interface CorpusEntry {
  readonly subject: string
  readonly published: boolean
  readonly was_published: boolean
}

/** Why an access code refuses a corpus entry (for audit rows and tests). */
export type CorpusDenialReason =
  | 'revoked'
  | 'expired'
  | 'raw_subject'
  | 'noncanonical_subject'
  | 'outside_role'
  | 'denied_by_glob'
  | 'unpublished'

/**
 * The single ACL decision, with its reason: `null` when `code` admits `entry` at `now`.
 *
 * Order: revoked, expired (both inclusive: a code revoked or expiring at `now` is already
 * dead; an unreadable date counts as reached), raw subject, non-canonical subject, no role
 * glob matches, a deny glob matches, published slice.
 */
export function corpusEntryDenial(
  code: AccessCode,
  entry: CorpusEntry,
  now: Date,
): CorpusDenialReason | null {
  if (reached(code.revoked_at, now)) return 'revoked'
  if (reached(code.expires_at, now)) return 'expired'
  if (isRawSubject(entry.subject)) return 'raw_subject'
  // Dot or empty segments could let a role glob admit what the canonical path would deny.
  if (!isCanonicalSubject(entry.subject)) return 'noncanonical_subject'
  if (!code.role_globs.some((glob) => matchesSubjectGlob(glob, entry.subject))) {
    return 'outside_role'
  }
  if (code.deny_globs.some((glob) => matchesSubjectGlob(glob, entry.subject))) {
    return 'denied_by_glob'
  }
  if (code.reads_published_slice && !(entry.published === true || entry.was_published === true)) {
    return 'unpublished'
  }
  return null
}

/** The single pure ACL decision: does `code` admit `entry` at `now`? */
export function allowsCorpusEntry(code: AccessCode, entry: CorpusEntry, now: Date): boolean {
  return corpusEntryDenial(code, entry, now) === null
}

/** The corpus entry a `corpus.note.changed` event describes (flags read strictly). */
export function corpusEntryFromEvent(event: ScopedEvent): CorpusEntry {
  return {
    subject: event.subject,
    published: readFlag(event.data, 'published'),
    was_published: readFlag(event.data, 'was_published'),
  }
}

/**
 * True when `subject` is in canonical form: at most `SUBJECT_MAX_LENGTH` characters, no control
 * characters or backslashes, an optional `scheme://` prefix, then `/`-separated segments none
 * of which is empty, `.` or `..` (also when spelt with `%2e`).
 */
export function isCanonicalSubject(subject: string): boolean {
  if (typeof subject !== 'string' || subject.length === 0 || subject.length > SUBJECT_MAX_LENGTH) {
    return false
  }
  if (/[\u0000-\u001f\u007f\\]/.test(subject)) return false
  const schemeEnd = subject.indexOf('://')
  let path = subject
  if (schemeEnd !== -1) {
    if (!/^[A-Za-z][A-Za-z0-9+.-]*$/.test(subject.slice(0, schemeEnd))) return false
    path = subject.slice(schemeEnd + 3)
  }
  return path.split('/').every((segment) => {
    const decoded = segment.replace(/%2e/gi, '.')
    return decoded !== '' && decoded !== '.' && decoded !== '..'
  })
}

/**
 * Path-like glob over subjects such as `wiki://software/project/standmeet/architecture`:
 * `*` matches any run of characters within one `/` segment (possibly empty), `**` (or any
 * longer run of stars) matches any run of characters across segments, everything else is
 * literal and case-sensitive. So `wiki://**` matches everything under wiki, and
 * `wiki://software/*` matches `wiki://software/project` but not `wiki://software/project/x`.
 * `a/**` + `/b` needs at least one segment in between (`wiki://**` + `/architecture` does not
 * match `wiki://architecture`). No RegExp is built from the glob; matching is
 * O(glob length × subject length). An empty or over-long glob matches nothing.
 */
export function matchesSubjectGlob(glob: string, subject: string): boolean {
  if (typeof glob !== 'string' || typeof subject !== 'string') return false
  if (glob.length === 0 || glob.length > SUBJECT_GLOB_MAX_LENGTH) return false
  if (subject.length > SUBJECT_MAX_LENGTH) return false

  const n = subject.length
  // reachable[j]: the glob consumed so far matches exactly subject[0, j).
  let reachable: boolean[] = Array.from({ length: n + 1 }, (_, j) => j === 0)
  let i = 0
  while (i < glob.length) {
    const next: boolean[] = new Array<boolean>(n + 1).fill(false)
    if (glob[i] === '*') {
      let run = 0
      while (glob[i] === '*') {
        run++
        i++
      }
      const crossesSlash = run >= 2
      for (let j = 0; j <= n; j++) {
        next[j] =
          reachable[j] === true ||
          (j > 0 && next[j - 1] === true && (crossesSlash || subject[j - 1] !== '/'))
      }
    } else {
      const literal = glob[i]
      i++
      for (let j = 1; j <= n; j++) next[j] = reachable[j - 1] === true && subject[j - 1] === literal
    }
    reachable = next
  }
  return reachable[n] === true
}

/** Why an event is not delivered to an endpoint. */
export type ScopeDenialReason =
  /** A `raw://` subject: never leaves, whatever the type or endpoint. */
  | 'raw_subject'
  /** Standalone endpoint, `corpus.note.changed`, neither published nor was_published. */
  | 'unpublished'
  /** Embed endpoint; the port answered false (revoked or expired code, deleted embed…). */
  | 'embed_denied'
  /** Embed endpoint, but no port answer was supplied: fails closed rather than guessing. */
  | 'embed_missing'

/** The outcome of the scope decision for one (event, endpoint) pair. */
export type ScopeDecision =
  { readonly admitted: true } | { readonly admitted: false; readonly reason: ScopeDenialReason }

/** Input of `decideScope`. */
export interface ScopeInput {
  readonly event: ScopedEvent
  /** The endpoint's embed id; `null` for a standalone endpoint. */
  readonly endpointEmbedId: string | null
  /**
   * The port's answer `embedAdmits(embedId, event)` for this event, asked fresh (never cached);
   * `null` when not asked. Ignored for standalone endpoints and for types other than
   * `corpus.note.changed`.
   */
  readonly embedAdmits: boolean | null
}

const ADMITTED: ScopeDecision = Object.freeze({ admitted: true })

const deny = (reason: ScopeDenialReason): ScopeDecision =>
  Object.freeze({ admitted: false, reason })

/**
 * True when the I/O layer must ask the embed scope port before `decideScope` can admit the
 * event for this endpoint; lets it skip the port call for every other case.
 */
export function requiresEmbedScope(event: ScopedEvent, endpointEmbedId: string | null): boolean {
  return (
    endpointEmbedId !== null && event.type === CORPUS_NOTE_CHANGED && !isRawSubject(event.subject)
  )
}

/**
 * The scope decision for one (event, endpoint) pair:
 * - a `raw://` subject is refused for every type and endpoint;
 * - types other than `corpus.note.changed` are admitted;
 * - a standalone endpoint gets the note only if `published || was_published`;
 * - an embed endpoint gets exactly what the embed scope port answered (`null` → refused).
 */
export function decideScope(input: ScopeInput): ScopeDecision {
  const { event, endpointEmbedId, embedAdmits } = input
  if (isRawSubject(event.subject)) return deny('raw_subject')
  if (event.type !== CORPUS_NOTE_CHANGED) return ADMITTED
  if (endpointEmbedId === null) {
    return publishedSliceAdmits(event.data) ? ADMITTED : deny('unpublished')
  }
  if (embedAdmits === null) return deny('embed_missing')
  return embedAdmits === true ? ADMITTED : deny('embed_denied')
}

/** A date that is unreadable (NaN) counts as reached, so a corrupt row fails closed. */
function reached(at: Date | null, now: Date): boolean {
  if (at === null) return false
  return !(at.getTime() > now.getTime())
}

function readFlag(data: unknown, key: 'published' | 'was_published'): boolean {
  // Own properties only: an inherited `published` must not open the published slice.
  return (
    typeof data === 'object' &&
    data !== null &&
    Object.hasOwn(data, key) &&
    (data as Record<string, unknown>)[key] === true
  )
}
