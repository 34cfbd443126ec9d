import { evolveDelivery, impliedEnqueueOf, type DeliveryRow, type LedgerRecord } from '@hookledger/core'
import type { Db } from '../database/database.js'
import { LEDGER_RECORD_COLUMNS } from '../ledger-record-columns.js'

/** Ledger entries in position order (positions are bigints as decimal text). */
export const byLedgerPosition = (a: { position: string }, b: { position: string }): number => {
  const d = BigInt(a.position) - BigInt(b.position)
  return d < 0n ? -1 : d > 0n ? 1 : 0
}

/**
 * The `fanout.decided` entries of these events of one owner, in position order
 * (ledger_event_decisions_idx): in ledger format 3 they are their deliveries' enqueues.
 */
export function fanoutDecisionsOf(db: Db, owner_id: string, eventIds: readonly string[]): Promise<LedgerRecord[]> {
  return db
    .selectFrom('ledger')
    .select(LEDGER_RECORD_COLUMNS)
    .where('event_id', '=', (eb) => eb.fn.any(eb.val(eventIds)))
    .where('owner_id', '=', owner_id)
    .where('kind', '=', 'fanout.decided')
    .orderBy('position')
    .$castTo<LedgerRecord>()
    .execute()
}

/**
 * Each delivery's ledger entries in position order: the rows that name it, and the enqueue each
 * format-3 `fanout.decided` of its event implies for its endpoint (core fanout-enqueues.ts),
 * which names it only through its pair — what folding one delivery reads (a retired one's last
 * row, its runs). The pair comes from its origin row or, once retired, its own rows; a delivery
 * the ledger knows nothing of has no entries.
 */
export async function deliveryLedgerEntries(db: Db, owner_id: string, ids: readonly string[]): Promise<Map<string, LedgerRecord[]>> {
  const out = new Map<string, LedgerRecord[]>(ids.map((id) => [id, []]))
  if (ids.length === 0) return out
  const [rows, origins] = await Promise.all([
    db
      .selectFrom('ledger')
      .select(LEDGER_RECORD_COLUMNS)
      .where('delivery_id', '=', (eb) => eb.fn.any(eb.val(ids)))
      .where('owner_id', '=', owner_id)
      .orderBy('position')
      .$castTo<LedgerRecord>()
      .execute(),
    db.selectFrom('delivery_origins').select(['id', 'endpoint_id', 'event_id']).where('id', '=', (eb) => eb.fn.any(eb.val(ids))).where('owner_id', '=', owner_id).execute(),
  ])
  const pairs = new Map<string, { endpoint_id: string; event_id: string }>(origins.map((o) => [o.id, o]))
  for (const r of rows) {
    out.get(r.delivery_id!)!.push(r)
    if (!pairs.has(r.delivery_id!) && r.endpoint_id !== null && r.event_id !== null) pairs.set(r.delivery_id!, { endpoint_id: r.endpoint_id, event_id: r.event_id })
  }
  if (pairs.size === 0) return out
  const decisions = await fanoutDecisionsOf(db, owner_id, [...new Set([...pairs.values()].map((p) => p.event_id))])
  for (const [id, pair] of pairs) {
    const implied = decisions.flatMap((d) => {
      const e = d.event_id === pair.event_id ? impliedEnqueueOf(d, pair.endpoint_id) : null
      return e ? [{ ...e, position: d.position }] : []
    })
    if (implied.length > 0) out.set(id, keptByTheFold([...out.get(id)!, ...implied].sort(byLedgerPosition)))
  }
  return out
}

/**
 * Drops an implied enqueue the fold ignores: one that finds the delivery already made (a decision
 * re-run over its pair keeps it). The retirement that ends a delivery's first life is not among
 * these entries (it names it only in its payload), so a second life — its event pruned and
 * published anew — shows its first life's history only.
 */
function keptByTheFold(entries: LedgerRecord[]): LedgerRecord[] {
  let row: DeliveryRow | null = null
  return entries.filter((e) => {
    if (e.kind === 'delivery.enqueued' && e.payload.by_fanout === true && row !== null) return false
    row = evolveDelivery(row, e)
    return true
  })
}
