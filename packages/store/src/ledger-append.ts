import { sql, type RawBuilder } from 'kysely'
import type { LedgerEntry } from '@hookledger/core'
import type { Trx } from './database.js'

/**
 * The insert of {@link ledgerAppend} (`… returning position`), to run alone or as one part of a
 * larger statement. One statement for the batch; rows are inserted, and positions drawn, in
 * array order.
 */
export function ledgerInsertSql(entries: readonly LedgerEntry[]): RawBuilder<{ position: string }> {
  const json = JSON.stringify(
    entries.map((e) => ({
      occurred_at: e.occurred_at.toISOString(),
      owner_id: e.owner_id,
      kind: e.kind,
      endpoint_id: e.endpoint_id,
      delivery_id: e.delivery_id,
      event_id: e.event_id,
      payload: e.payload,
      actor: e.actor,
    })),
  )
  return sql<{ position: string }>`
    insert into ledger (occurred_at, owner_id, kind, endpoint_id, delivery_id, event_id, payload, actor)
    select r.occurred_at, r.owner_id, r.kind, r.endpoint_id, r.delivery_id, r.event_id, r.payload, r.actor
    from jsonb_to_recordset(${json}::jsonb)
      as r(occurred_at timestamptz, owner_id text, kind text, endpoint_id uuid, delivery_id uuid,
           event_id text, payload jsonb, actor text)
    returning position
  `
}

/**
 * Appends entries in order and returns their positions. Callers update (and so lock) the
 * projection rows first and append last: positions are then taken after the row locks, so for
 * any row the ledger's order is the order its changes were applied, which replay relies on.
 */
export async function ledgerAppend(trx: Trx, entries: readonly LedgerEntry[]): Promise<string[]> {
  if (entries.length === 0) return []
  const result = await ledgerInsertSql(entries).execute(trx)
  return result.rows.map((r) => r.position)
}
