/**
 * Which of a receiver's response headers the `delivery.attempted` entry keeps, and how much of
 * them: enough to debug a receiver (content type, its request id, Retry-After, a server name),
 * small enough that the ledger's footprint barely moves.
 *
 * Dropped: hop-by-hop headers (`connection`, `keep-alive`, `transfer-encoding`), `date` (the
 * attempt's `started_at` says when) and `set-cookie` (a receiver's session is not ours to keep).
 * Kept: at most `MAX_RESPONSE_HEADERS` headers in the order received, names lower-cased, each
 * value cut to `MAX_RESPONSE_HEADER_VALUE` characters, and the whole at most
 * `MAX_RESPONSE_HEADERS_BYTES` (name + value lengths); what does not fit is left out.
 */
export const MAX_RESPONSE_HEADERS = 16
export const MAX_RESPONSE_HEADER_VALUE = 256
export const MAX_RESPONSE_HEADERS_BYTES = 1024

const NOT_KEPT: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'date',
  'set-cookie',
  'proxy-connection',
  'upgrade',
])

/** The headers to keep, from Node's `IncomingMessage.headers` (or any name → value(s) map). */
export function keptResponseHeaders(
  raw: Readonly<Record<string, string | readonly string[] | undefined>>,
): Record<string, string> {
  const kept: Record<string, string> = {}
  let count = 0
  let bytes = 0
  for (const [rawName, rawValue] of Object.entries(raw)) {
    if (rawValue === undefined) continue
    const name = rawName.toLowerCase()
    if (NOT_KEPT.has(name) || name in kept) continue
    const joined = typeof rawValue === 'string' ? rawValue : rawValue.join(', ')
    const value = joined.slice(0, MAX_RESPONSE_HEADER_VALUE)
    if (count >= MAX_RESPONSE_HEADERS || bytes + name.length + value.length > MAX_RESPONSE_HEADERS_BYTES) continue
    kept[name] = value
    count += 1
    bytes += name.length + value.length
  }
  return kept
}
