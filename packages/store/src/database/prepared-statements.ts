/**
 * Statements a connection runs again and again are prepared on it, as pgJDBC does
 * (`prepareThreshold`): node-postgres parses and plans every unnamed statement anew, and
 * Kysely sends no names, so the claim's statements and the fan-out's batch spent more time
 * being planned than run (0.3–0.5 ms a call each, measured with pg_stat_statements). A
 * statement with parameters seen PREPARE_AFTER times on a connection is sent by name from then
 * on: PostgreSQL parses it once, and once it has seen five executions it keeps one generic plan
 * whenever that plan's estimate is no worse than its custom plans' (its own `plan_cache_mode =
 * auto` rule), else it goes on planning per call.
 *
 * Bounded per connection (MAX_PREPARED names, the counts of MAX_COUNTED texts), since statement
 * texts built at run time are not all alike. A prepared statement whose result's shape changed
 * under it (a column added while the service ran: `cached plan must not change result type`) is
 * sent unnamed on that connection from then on, and run again at once when it was not inside a
 * transaction.
 *
 * A kept plan is made for the tables as they were then, so a statement must not leave to the
 * planner's estimates how it finds a few rows among many that may grow: each row a hot-path
 * statement touches is found by key under a lateral (delivery-claim.ts `lockHeads`,
 * delivery-following.ts). Before the one-call settle's look-ahead was, a generic plan made while
 * the queue was small read every due delivery once per endpoint settled, and the bench's soak
 * stalled for 10–60 s in 6 runs of 9.
 *
 * `createDb`'s `prepare` (off unless asked: tests and tools plan afresh); the service turns it
 * on unless HOOKLEDGER_DB_PREPARED_STATEMENTS=off.
 */
import { createHash } from 'node:crypto'
import type { PostgresPool, PostgresPoolClient } from 'kysely'

/** Executions of a statement text on a connection before it is sent by name. */
export const PREPARE_AFTER = 5
/** Named statements per connection at most. */
export const MAX_PREPARED = 100
/** Statement texts counted per connection at most (the counts start over beyond it). */
const MAX_COUNTED = 1_000

interface ConnectionStatements {
  readonly seen: Map<string, number>
  readonly named: Map<string, string>
  readonly unnamed: Set<string>
  /** Between a `begin` and its `commit` or `rollback`, as this connection's statements said. */
  inTransaction: boolean
}

/** The name a statement text is prepared under: the same text, the same name, on every connection. */
export function statementName(text: string): string {
  return 'hl_' + createHash('sha256').update(text).digest('hex').slice(0, 24)
}

/**
 * Whether `text` goes by name on this connection now (counting this execution), and under which.
 * Pure over the connection's record, for the table test.
 */
export function nameFor(state: ConnectionStatements, text: string, hasParameters: boolean): string | null {
  if (!hasParameters || state.unnamed.has(text)) return null
  const named = state.named.get(text)
  if (named !== undefined) return named
  const seen = (state.seen.get(text) ?? 0) + 1
  if (seen < PREPARE_AFTER || state.named.size >= MAX_PREPARED) {
    if (state.seen.size >= MAX_COUNTED && !state.seen.has(text)) state.seen.clear()
    state.seen.set(text, seen)
    return null
  }
  state.seen.delete(text)
  const name = statementName(text)
  state.named.set(text, name)
  return name
}

export function connectionStatements(): ConnectionStatements {
  return { seen: new Map(), named: new Map(), unnamed: new Set(), inTransaction: false }
}

/** Whether a connection is inside a transaction after `text` (Kysely's own begin, commit and rollback). */
export function transactionAfter(inTransaction: boolean, text: string): boolean {
  if (/^\s*(begin|start\s+transaction)\b/i.test(text)) return true
  if (/^\s*(commit|end|abort)\b/i.test(text) || /^\s*rollback\s*(;|$)/i.test(text)) return false
  return inTransaction
}

/** SQLSTATE 0A000 with this message: the prepared statement can no longer run on this connection. */
function resultTypeChanged(err: unknown): boolean {
  const e = err as { code?: string; message?: string }
  return e?.code === '0A000' && typeof e.message === 'string' && e.message.includes('cached plan must not change result type')
}

/** `pool` with its connections preparing their repeated statements (one wrapper per client, as Kysely expects). */
export function preparingPool(pool: PostgresPool): PostgresPool {
  const wrappers = new WeakMap<PostgresPoolClient, PostgresPoolClient>()
  return {
    async connect() {
      const client = await pool.connect()
      let wrapped = wrappers.get(client)
      if (!wrapped) {
        const state = connectionStatements()
        wrapped = {
          query: ((text: unknown, values?: readonly unknown[]) => {
            if (typeof text !== 'string') return (client.query as (...a: unknown[]) => unknown).call(client, text, values)
            state.inTransaction = transactionAfter(state.inTransaction, text)
            const name = nameFor(state, text, values !== undefined && values.length > 0)
            if (name === null) return client.query(text, values ?? [])
            // node-postgres takes a name in a query config, which Kysely's pool type leaves out.
            const query = client.query as unknown as (config: { name: string; text: string; values?: readonly unknown[] }) => Promise<unknown>
            return query.call(client, { name, text, values }).catch((err: unknown) => {
              if (!resultTypeChanged(err)) throw err
              state.named.delete(text)
              state.unnamed.add(text)
              // Outside a transaction the failed statement did nothing: run it again unnamed. Inside
              // one, the transaction is aborted and its caller retries it as after any failure.
              if (state.inTransaction) throw err
              return client.query(text, values ?? [])
            })
          }) as PostgresPoolClient['query'],
          release: () => client.release(),
        }
        wrappers.set(client, wrapped)
      }
      return wrapped
    },
    end: () => pool.end(),
  }
}
