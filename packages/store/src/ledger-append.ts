import { sql, type RawBuilder } from 'kysely'
import type { LedgerEntry } from '@hookledger/core'
import type { Trx } from './database.js'

/**
 * The insert of {@link ledgerAppend} (`… returning position`), to run alone or as one part of a
 * larger statement. One statement for the batch; rows are inserted, and positions drawn, in
 * array order. `onlyIfIn` keeps an entry about one of `ids` only if that delivery is in the
 * named CTE's `id`s (fan-out: only the deliveries actually inserted).
 */
export function ledgerInsertSql(
  entries: readonly LedgerEntry[],
  options?: { onlyIfIn: { ids: ReadonlySet<string>; cte: string } },
): RawBuilder<{ position: string }> {
  const only = options?.onlyIfIn
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
      conditional: only !== undefined && e.delivery_id !== null && only.ids.has(e.delivery_id),
    })),
  )
  return sql<{ position: string }>`
    insert into ledger (occurred_at, owner_id, kind, endpoint_id, delivery_id, event_id, payload, actor)
    select r.occurred_at, r.owner_id, r.kind, r.endpoint_id, r.delivery_id, r.event_id, r.payload, r.actor
    from jsonb_array_elements(${json}::jsonb) with ordinality as x(entry, n)
    cross join lateral jsonb_to_record(x.entry)
      as r(occurred_at timestamptz, owner_id text, kind text, endpoint_id uuid, delivery_id uuid,
           event_id text, payload jsonb, actor text, conditional boolean)
    ${only ? sql`where not r.conditional or r.delivery_id in (select id from ${sql.ref(only.cte)})` : sql``}
    order by x.n
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
