import { sql } from 'kysely'
import type { LedgerEntry } from '@hookledger/core'
import type { Db } from './database.js'
import { ledgerWrite } from './ledger-write.js'

/** Default event retention: 30 days. */
export const EVENT_RETENTION_DEFAULT_MS = 30 * 24 * 3_600_000

/**
 * Deletes events published before `now - retentionMs`, a batch at a time, appending one
 * `event.pruned` entry each. Deliveries still waiting for a pruned event are discarded when
 * next claimed (`event_pruned`). Returns how many events were pruned.
 */
export async function eventPrune(
  db: Db,
  params: { now: Date; retentionMs: number; limit?: number },
): Promise<number> {
  const cutoff = new Date(params.now.getTime() - params.retentionMs)
  return db.transaction().execute(async (trx) => {
    const pruned = (
      await sql<{ owner_id: string; id: string; published_at: Date }>`
        delete from events where (owner_id, id) in (
          select owner_id, id from events where published_at < ${cutoff}
          order by published_at limit ${params.limit ?? 1000} for update skip locked
        ) returning owner_id, id, published_at
      `.execute(trx)
    ).rows
    const entries: LedgerEntry[] = pruned.map((e) => ({
      kind: 'event.pruned',
      occurred_at: params.now,
      owner_id: e.owner_id,
      endpoint_id: null,
      delivery_id: null,
      event_id: e.id,
      actor: 'system',
      payload: { published_at: e.published_at.toISOString() },
    }))
    await ledgerWrite(trx, { entries })
    return pruned.length
  })
}
