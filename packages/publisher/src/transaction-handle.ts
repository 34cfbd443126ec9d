import { CompiledQuery } from 'kysely'

/**
 * A `pg` `Client` or `PoolClient` (structurally: anything with pg's `query(text, values)`),
 * which the caller has put inside `BEGIN … COMMIT`.
 */
export interface PgTransactionClient {
  query(text: string, values?: unknown[]): Promise<{ rows: any[] }>
}

/**
 * What `publish` needs of a Kysely transaction (`Transaction<AppDatabase>` of any database type),
 * described structurally rather than as `Kysely<any>`: kysely's classes carry `#private`
 * members, so the application's kysely types — its own copy, or the same copy's CommonJS
 * declarations in a CommonJS app — would not be assignable to the class this package sees.
 */
export interface KyselyTransactionLike {
  readonly isTransaction: boolean
  // `never`: any kysely's executeQuery is accepted without naming its query types (another copy's
  // would not match); what is passed is kysely's own `CompiledQuery.raw(sql, parameters)`.
  executeQuery(query: never): Promise<{ readonly rows: readonly unknown[] }>
}

/**
 * What `publish` runs in: a Kysely transaction of any database type (assignable here without a
 * cast), or a pg client in a transaction.
 */
export type PublishTransaction = KyselyTransactionLike | PgTransactionClient

/** Runs one parameterised statement in the caller's transaction, whichever kind it is. */
export type StatementRunner = <R>(text: string, values: unknown[]) => Promise<R[]>

const isKysely = (trx: PublishTransaction): trx is KyselyTransactionLike =>
  typeof (trx as KyselyTransactionLike).executeQuery === 'function' && 'isTransaction' in trx

/**
 * The runner for `trx`. Refused: a Kysely that is not a transaction and a `pg.Pool` — each of
 * their statements commits on its own, so the event would not follow the caller's change
 * (the whole point of publishing here). A pg client outside BEGIN cannot be told apart.
 */
export function statementRunnerFor(trx: PublishTransaction): StatementRunner {
  if (trx === null || typeof trx !== 'object') throw new TypeError('publish needs a Kysely transaction or a pg client inside BEGIN … COMMIT')
  if (isKysely(trx)) {
    if (!trx.isTransaction) {
      throw new TypeError('publish needs a transaction: call it inside db.transaction().execute(async (trx) => …) and pass trx')
    }
    const execute = trx.executeQuery.bind(trx) as (query: CompiledQuery) => Promise<{ rows: unknown[] }>
    return async (text, values) => (await execute(CompiledQuery.raw(text, values))).rows as never
  }
  if (typeof trx.query !== 'function') throw new TypeError('publish needs a Kysely transaction or a pg client inside BEGIN … COMMIT')
  if ('totalCount' in trx && 'idleCount' in trx) {
    throw new TypeError('publish needs one client inside BEGIN … COMMIT, not a pg.Pool: const client = await pool.connect(), then BEGIN on it')
  }
  return async (text, values) => (await trx.query(text, values)).rows
}
