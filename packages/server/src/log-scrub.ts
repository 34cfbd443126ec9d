/**
 * What never reaches a log line, whatever a call site passes: the credentials in a URL's user
 * info (`https://user:password@host/` → `https://***@host/`). Field names that hold secrets are
 * redacted by the logger's paths (service.ts); this catches the ones inside strings, such as an
 * endpoint URL a caller typed with a password in it (logged with the request's input at debug).
 */

const USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@]*@/gi

/** `value` with every URL's user info replaced by `***`; objects and arrays copied, depth-limited. */
export function scrubLogValue(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return value.includes('@') ? value.replace(USERINFO, '$1***@') : value
  if (depth > 6 || value === null || typeof value !== 'object') return value
  if (value instanceof Error) return value
  if (Array.isArray(value)) return value.map((v) => scrubLogValue(v, depth + 1))
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(value)) out[k] = scrubLogValue(v, depth + 1)
  return out
}
