import { sql } from 'kysely'
import type { Db } from './database/database.js'

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
  const { rows } = await sql<{ n: string }>`
    select hookledger_events_prune(${cutoff}::timestamptz, ${params.limit ?? 1000}::integer, ${params.now}::timestamptz)::text as n
  `.execute(db)
  return Number(rows[0]!.n)
}
