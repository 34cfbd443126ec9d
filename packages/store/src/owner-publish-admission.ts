import { sql } from 'kysely'
import type { OwnerPublishRefusalAnswer } from '@hookledger/core'
import type { Db } from './database/database.js'

/**
 * The API's publish limit (migration 0018): takes `cost` events from the owner's bucket in a
 * statement of its own, before the publish's transaction, so the owner's row is locked for
 * that statement only (its commit does not wait for the WAL flush), not through the publish's
 * durable commit. Null: admitted (or no limit), publish with the admitted statement; else the
 * refusal, as hookledger_publish answers it (suspended, or over the limit until `retry_at`).
 */
export async function ownerPublishAdmit(db: Db, owner: string, cost: number, now: Date): Promise<OwnerPublishRefusalAnswer | null> {
  const { rows } = await sql<{ refusal: OwnerPublishRefusalAnswer | null }>`
    select hookledger_publish_admit(${owner}, ${cost}::integer, ${now}::timestamptz) as refusal
  `.execute(db)
  return rows[0]!.refusal
}
