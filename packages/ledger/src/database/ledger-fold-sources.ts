/**
 * What `ledger replay` and projection snapshots fold: the ledger entries about each table's
 * rows (optionally within a range of positions), and the per-row folds that run them through
 * the core evolve functions while checking each row's history (ledger-replay-consistency.ts).
 * A fold may start from a row's state in a snapshot instead of from nothing.
 */
import { sql, type RawBuilder } from 'kysely'
import {
  evolveDelivery,
  evolveEndpoint,
  type DeliveryRow,
  type EndpointRow,
  type LedgerRecord,
} from '@hookledger/core'
import type { Trx } from '@hookledger/store'
import { DeliveryHistoryCheck, EndpointHistoryCheck, type ReportProblem } from './ledger-replay-consistency.js'
import type { DifferenceSink, EntityFold, ReplayTable } from './ledger-replay-stream.js'

/** Positions folded: [from, before); either end open when absent. */
export interface PositionRange {
  readonly from?: string | undefined
  readonly before?: string | undefined
}

const ENTRY_COLUMNS = sql`position, occurred_at, owner_id, kind, endpoint_id, delivery_id, event_id, payload, actor`

/**
 * The delivery entries that move an endpoint: `evolveEndpoint` reads a claim (it takes the
 * lease) and an attempt, a discard or a busy snooze (they release it); every other entry that
 * names an endpoint leaves it as it is unless its kind is `endpoint.*`. A unit test holds
 * evolveEndpoint to this list.
 */
export const ENDPOINT_LEASE_KINDS = ['delivery.claimed', 'delivery.attempted', 'delivery.discarded', 'delivery.lease_busy'] as const

const inRange = (range: PositionRange, column = sql.ref('position')) =>
  sql.join(
    [
      ...(range.from !== undefined ? [sql`${column} >= ${range.from}::bigint`] : []),
      ...(range.before !== undefined ? [sql`${column} < ${range.before}::bigint`] : []),
      sql`true`,
    ],
    sql` and `,
  )

/** Every entry `applyEntry` folds into some endpoint and that can change it, by endpoint and position. */
export const endpointEntries = (range: PositionRange = {}): RawBuilder<unknown> => sql`
  select ${ENTRY_COLUMNS} from ledger
  where endpoint_id is not null
    and (kind like 'endpoint.%' or kind in (${sql.join(ENDPOINT_LEASE_KINDS.map((k) => sql.lit(k)))}))
    and ${inRange(range)}
  order by endpoint_id, position
`
/** Every entry `applyEntry` folds into the delivery it names, by delivery and position (`ledger_delivery_id_idx`). */
export const deliveryEntries = (range: PositionRange = {}): RawBuilder<unknown> => sql`
  select ${ENTRY_COLUMNS} from ledger where delivery_id is not null and ${inRange(range)} order by delivery_id, position
`
/**
 * Each retirement expanded into one entry per delivery it names (`ledger_retired_idx`;
 * `deliveryIdsOf` in core), by delivery and position: merged with `deliveryEntries` on the way
 * (a union sorted by PostgreSQL would sort the whole ledger first). The copies carry the
 * payload without the id list, which the fold does not need and would otherwise travel once
 * per delivery it names.
 */
export const retiredDeliveryEntries = (range: PositionRange = {}): RawBuilder<unknown> => sql`
  select l.position, l.occurred_at, l.owner_id, l.kind, l.endpoint_id, r.id::uuid as delivery_id, l.event_id,
         l.payload - 'delivery_ids' as payload, l.actor
  from ledger l cross join lateral jsonb_array_elements_text(l.payload -> 'delivery_ids') as r(id)
  where l.kind = 'deliveries.retired' and ${inRange(range, sql.ref('l.position'))}
  order by delivery_id, l.position
`

/**
 * Each format-3 fan-out decision expanded into the enqueue it implies for each endpoint it
 * matched (core `impliedEnqueues`, fanout-enqueues.ts: the id derived from the pair, due at the
 * decision or after the cool-down, `by_fanout`), by delivery and position: merged with
 * `deliveryEntries` on the way, as the retirements are.
 */
export const fanoutDeliveryEntries = (range: PositionRange = {}): RawBuilder<unknown> => sql`
  select l.position, l.occurred_at, l.owner_id, 'delivery.enqueued' as kind, m.id::uuid as endpoint_id,
         hookledger_delivery_id(m.id::uuid, l.event_id) as delivery_id, l.event_id,
         json_build_object(
           'event_type', p.type,
           'next_attempt_at', case when c.cooling then p.cool_down -> 'until' else to_jsonb(l.occurred_at) end,
           'cool_down', c.cooling,
           'by_fanout', true) as payload,
         l.actor
  from ledger l
  -- The payload read once a decision (OFFSET 0 keeps the planner from repeating these for each
  -- endpoint it matched: a wide decision's payload is stored compressed, read whole each time).
  cross join lateral (select l.payload ->> 'type' as type, l.payload -> 'matched' as matched, l.payload -> 'cool_down' as cool_down offset 0) p
  cross join lateral jsonb_array_elements_text(p.matched) as m(id)
  cross join lateral (select coalesce(p.cool_down -> 'endpoints' ? m.id, false) as cooling) c
  where l.kind = 'fanout.decided' and l.payload -> 'enqueues' = 'true' and ${inRange(range, sql.ref('l.position'))}
  order by delivery_id, l.position
`

/** Reports a broken rule of the current row's history as an `inconsistent` difference. */
export function problemReporter(sink: DifferenceSink, table: ReplayTable, current: { key: string }): ReportProblem {
  return (position, problem) => {
    if (!sink.keeping) return sink.count(table, 'inconsistent')
    sink.add({
      table,
      key: current.key,
      kind: 'inconsistent',
      columns: [],
      live: null,
      replayed: null,
      ...(position !== null ? { position } : {}),
      problem,
    })
  }
}

/** `applyEntry`, for one row: an entry that returns no row removes it (a purge, a retirement). */
export class EndpointFold implements EntityFold<EndpointRow> {
  readonly current = { key: '' }
  readonly #check: EndpointHistoryCheck
  #row: EndpointRow | null = null

  constructor(report: (current: { key: string }) => ReportProblem) {
    this.#check = new EndpointHistoryCheck(report(this.current))
  }
  start(key: string, from: EndpointRow | null): void {
    this.current.key = key
    this.#row = from
    if (from === null) this.#check.start()
    else this.#check.resume(from)
  }
  apply(e: LedgerRecord): void {
    this.#row = evolveEndpoint(this.#row, e) // null after endpoint.purged: the row is gone
    this.#check.apply(e)
  }
  finish(): EndpointRow | null {
    this.#check.finish()
    return this.#row
  }
}

export class DeliveryFold implements EntityFold<DeliveryRow> {
  readonly current = { key: '' }
  readonly #check: DeliveryHistoryCheck
  #row: DeliveryRow | null = null
  attempts = 0

  constructor(report: (current: { key: string }) => ReportProblem) {
    this.#check = new DeliveryHistoryCheck(report(this.current))
  }
  start(key: string, from: DeliveryRow | null): void {
    this.current.key = key
    this.#row = from
    if (from === null) this.#check.start()
    else this.#check.resume(from)
  }
  apply(e: LedgerRecord): void {
    this.#row = evolveDelivery(this.#row, e) // null after deliveries.retired: the row is gone
    this.#check.apply(e)
    if (e.kind === 'delivery.attempted') this.attempts++
  }
  finish(): DeliveryRow | null {
    this.#check.finish()
    return this.#row
  }
}

/** The planner's row estimate of a query (from the statistics: costs nothing to ask). */
export async function plannedRows(trx: Trx, query: RawBuilder<unknown>): Promise<number | null> {
  const r = await sql<{ 'QUERY PLAN': [{ Plan: { 'Plan Rows': number } }] }>`explain (format json) ${query}`.execute(trx)
  const n = r.rows[0]?.['QUERY PLAN']?.[0]?.Plan?.['Plan Rows']
  return typeof n === 'number' && Number.isFinite(n) ? n : null
}
