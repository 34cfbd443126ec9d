import { evolveDelivery, impliedEnqueueOf, type DeliveryRow, type LedgerRecord } from '@hookledger/core'
import type { Db } from '../database/database.js'
import { LEDGER_RECORD_COLUMNS } from '../ledger-record-columns.js'

/** A delivery as its history is looked up: its id, and its pair when the caller knows it. */
export interface DeliveryKey {
  readonly id: string
  readonly endpoint_id?: string
  readonly event_id?: string
}

const byPosition = (a: { position: string }, b: { position: string }) => {
  const d = BigInt(a.position) - BigInt(b.position)
  return d < 0n ? -1 : d > 0n ? 1 : 0
}

/**
 * Each delivery's ledger entries in position order: the rows that name it, and the enqueue each
 * format-3 `fanout.decided` of its event implies for its endpoint (core fanout-enqueues.ts),
 * which names it only through its pair — what folding one delivery reads (a retired one's last
 * row, its runs, what last scheduled it). The pair comes from the caller, the delivery's rows or
 * its origin row; a delivery the ledger knows nothing of has no entries.
 */
export async function deliveryLedgerEntries(db: Db, owner_id: string, keys: readonly DeliveryKey[]): Promise<Map<string, LedgerRecord[]>> {
  const out = new Map<string, LedgerRecord[]>(keys.map((k) => [k.id, []]))
  if (keys.length === 0) return out
  const ids = keys.map((k) => k.id)
  const unknown = keys.filter((k) => k.endpoint_id === undefined || k.event_id === undefined).map((k) => k.id)
  const [rows, origins] = await Promise.all([
    db
      .selectFrom('ledger')
      .select(LEDGER_RECORD_COLUMNS)
      .where('delivery_id', '=', (eb) => eb.fn.any(eb.val(ids)))
      .where('owner_id', '=', owner_id)
      .orderBy('position')
      .$castTo<LedgerRecord>()
      .execute(),
    unknown.length === 0
      ? []
      : db.selectFrom('delivery_origins').select(['id', 'endpoint_id', 'event_id']).where('id', '=', (eb) => eb.fn.any(eb.val(unknown))).where('owner_id', '=', owner_id).execute(),
  ])
  const pairs = new Map<string, { endpoint_id: string; event_id: string }>()
  for (const k of keys) if (k.endpoint_id !== undefined && k.event_id !== undefined) pairs.set(k.id, { endpoint_id: k.endpoint_id, event_id: k.event_id })
  for (const o of origins) pairs.set(o.id, { endpoint_id: o.endpoint_id, event_id: o.event_id })
  for (const r of rows) {
    out.get(r.delivery_id!)!.push(r)
    if (!pairs.has(r.delivery_id!) && r.endpoint_id !== null && r.event_id !== null) pairs.set(r.delivery_id!, { endpoint_id: r.endpoint_id, event_id: r.event_id })
  }
  const eventIds = [...new Set([...pairs.values()].map((p) => p.event_id))]
  if (eventIds.length === 0) return out
  const decisions = await db
    .selectFrom('ledger')
    .select(LEDGER_RECORD_COLUMNS)
    .where('event_id', '=', (eb) => eb.fn.any(eb.val(eventIds)))
    .where('owner_id', '=', owner_id)
    .where('kind', '=', 'fanout.decided')
    .orderBy('position')
    .$castTo<LedgerRecord>()
    .execute()
  const byEvent = new Map<string, LedgerRecord[]>()
  for (const d of decisions) byEvent.set(d.event_id!, [...(byEvent.get(d.event_id!) ?? []), d])
  for (const [id, pair] of pairs) {
    const implied = (byEvent.get(pair.event_id) ?? []).flatMap((d) => {
      const e = impliedEnqueueOf(d, pair.endpoint_id)
      return e ? [{ ...e, position: d.position }] : []
    })
    if (implied.length > 0) out.set(id, keptByTheFold([...out.get(id)!, ...implied].sort(byPosition)))
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
