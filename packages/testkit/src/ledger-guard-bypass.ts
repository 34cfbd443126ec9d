import { sql } from 'kysely'
import type { Db, Trx } from '@hookledger/store'

/**
 * Runs `fn` in a transaction with triggers off (`session_replication_role = replica`, which
 * needs a superuser): how a test forges what someone with database access could — edit the
 * ledger, or a projection behind its back — to show that replay and the chain catch it.
 */
export function bypassLedgerGuards<T>(db: Db, fn: (trx: Trx) => Promise<T>): Promise<T> {
  return db.transaction().execute(async (trx) => {
    await sql`set local session_replication_role = replica`.execute(trx)
    return fn(trx)
  })
}
