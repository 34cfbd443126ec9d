/**
 * What a database error means for the unit of work that hit it, from its SQLSTATE (or, for a
 * connection that never opened or broke, the socket error): `unavailable` — the database is
 * not reachable now (answer 503 with Retry-After; retry later); `retryable` — a transient
 * conflict (serialization failure, deadlock): run the unit again at once, with jitter;
 * `permanent` — anything else (a bug or bad input: do not retry).
 */
export type DatabaseErrorClass = 'unavailable' | 'retryable' | 'permanent'

const UNAVAILABLE_SQLSTATES = new Set([
  '57P01', // admin_shutdown: terminating connection due to administrator command
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now: the database system is starting up / shutting down
  '53300', // too_many_connections
  '58030', // io_error
  '25006', // read_only_sql_transaction: a standby (mid-failover, before the pool finds the promoted one)
])
const RETRYABLE_SQLSTATES = new Set([
  '40001', // serialization_failure
  '40P01', // deadlock_detected
  '55P03', // lock_not_available
])
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN'])
// node-postgres reports a dropped or never-opened connection with these messages, no code.
const LOST_CONNECTION = /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|Connection ended unexpectedly|the database system is (starting up|shutting down|in recovery mode)/i

export function classifyDatabaseError(err: unknown): DatabaseErrorClass {
  if (typeof err !== 'object' || err === null) return 'permanent'
  const code = (err as { code?: unknown }).code
  if (typeof code === 'string') {
    if (UNAVAILABLE_SQLSTATES.has(code) || code.startsWith('08') || SOCKET_CODES.has(code)) return 'unavailable'
    if (RETRYABLE_SQLSTATES.has(code)) return 'retryable'
  }
  const message = (err as { message?: unknown }).message
  if (typeof message === 'string' && LOST_CONNECTION.test(message)) return 'unavailable'
  // An aggregate (several addresses refused) is unavailable if every part is.
  const errors = (err as { errors?: unknown }).errors
  if (Array.isArray(errors) && errors.length > 0 && errors.every((e) => classifyDatabaseError(e) === 'unavailable')) return 'unavailable'
  return 'permanent'
}
