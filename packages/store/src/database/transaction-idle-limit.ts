/**
 * The delivery cycle's transactions (a claim, a settle the locking way, the rescuer, a fan-out)
 * hold row locks on deliveries and endpoints between their statements for milliseconds. A worker
 * cut off from the database in such a gap (a network partition) leaves its transaction open on
 * the server, "idle in transaction", holding those locks until the server notices the client is
 * gone: with TCP keepalives at their defaults, two hours; behind a proxy that keeps its end of
 * the connection up, never. Meanwhile no other worker can rescue the deliveries it held, and a
 * rescuer that waits for the endpoint's lock stalls the whole maintenance pass (seen in the
 * fault suite's partition test: 8 deliveries held past their lease for 27 s and counting).
 *
 * So each of those transactions tells the server to end it once it sits idle this long: far
 * longer than any gap between its statements, far shorter than a lease. Long readers (replay,
 * export: cursors a slow consumer may leave idle) do not set it.
 */
import { sql, type RawBuilder } from 'kysely'
import type { Trx } from './database.js'

export const TRANSACTION_IDLE_LIMIT_MS = 10_000

/**
 * The setting as an expression, for a transaction's first statement to carry (the claim's
 * candidates read, the fan-out's batch): the limit without a round trip of its own.
 * Transaction-local: the connection's own setting is untouched.
 */
export function transactionIdleLimitSql(ms: number = TRANSACTION_IDLE_LIMIT_MS): RawBuilder<string> {
  return sql<string>`set_config('idle_in_transaction_session_timeout', ${String(ms)}, true)`
}

/** Sets the limit for the rest of `trx`, in a statement of its own. */
export async function limitTransactionIdle(trx: Trx, ms: number = TRANSACTION_IDLE_LIMIT_MS): Promise<void> {
  await sql`select ${transactionIdleLimitSql(ms)}`.execute(trx)
}
