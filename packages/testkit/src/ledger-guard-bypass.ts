import { sql } from 'kysely'
import type { Db, Trx } from '@hookledger/store'
import { adminDbOf } from './test-database.js'

/**
 * Runs `fn` as a superuser on the same database, in a transaction with triggers off
 * (`session_replication_role = replica`): how a test forges what someone holding the owner's or
 * a superuser's credential could — edit the ledger, or a projection behind its back — to show
 * that replay and the chain catch it. (The service's own role can do none of it: the tamper
 * suite shows that.)
 */
export function bypassLedgerGuards<T>(db: Db, fn: (trx: Trx) => Promise<T>): Promise<T> {
  return adminDbOf(db).transaction().execute(async (trx) => {
    await sql`set local session_replication_role = replica`.execute(trx)
    return fn(trx)
  })
}
