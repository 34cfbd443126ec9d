import {
  applyEntry,
  type DeliveryRow,
  type EndpointRow,
  type LedgerEntry,
  type ProjectionSet,
  type Touched,
} from '@hookledger/core'
import { sql, type RawBuilder } from 'kysely'
import type { Trx } from './database.js'
import { ledgerInsertSql } from './ledger-append.js'
import { channelSql } from './event-publish.js'
import { DELIVERY_COLUMNS, ENDPOINT_COLUMNS, projectionDeleteSql, projectionInsertSql, projectionUpdateSql } from './projection-write.js'
import { endpointQueueRefresh, endpointsWithMovedHeads, type QueueMerge } from './endpoint-queue.js'

/**
 * The rows the entries start from. Each was read `for update` by the caller (so it cannot
 * change underneath), or is absent: an entry that creates a row absent from the base inserts
 * it, and a row that does exist after all fails the insert loudly.
 */
export interface WriteBase {
  readonly endpoints?: readonly EndpointRow[]
  readonly deliveries?: readonly DeliveryRow[]
}

/** One append-and-project write. */
export interface LedgerWrite {
  readonly base?: WriteBase
  readonly entries: readonly LedgerEntry[]
  /**
   * Fan-out's idempotent enqueue: a delivery that already exists (the same endpoint and event)
   * is kept as it is, and the entries about it are dropped, so the ledger matches the table.
   */
  readonly existingDeliveries?: 'fail' | 'keep'
  /**
   * Entries already appended earlier in this transaction that the rows fold over too (the
   * settle appends its delivery entries, then decides endpoint transitions on the result).
   */
  readonly appended?: readonly LedgerEntry[]
  /**
   * Data-modifying statements (insert, update, delete) for the same round trip, run as CTEs
   * (mark events fanned out …). A plain SELECT would not run: PostgreSQL skips unreferenced
   * read-only CTEs — use `notify` for NOTIFY.
   */
  readonly alongside?: readonly RawBuilder<unknown>[]
  /**
   * How the claim's queue heads of the touched endpoints are refreshed (endpoint-queue.ts):
   * `assign` (default) when the caller holds those endpoints `for update`, `earliest` for
   * fan-out, which holds them `for share`.
   */
  readonly queueMerge?: QueueMerge
  /** NOTIFY on commit: always, or only when the write inserted deliveries. */
  /** NOTIFY on commit, on this install's channel (channelSql): always, or only when the write inserted deliveries. */
  readonly notify?: { readonly channel: 'events' | 'deliveries'; readonly when?: 'always' | 'deliveries_inserted' }
}

/** What a write changed. */
export interface WriteResult {
  readonly endpoints: Map<string, EndpointRow>
  readonly deliveries: Map<string, DeliveryRow>
  /** Deliveries inserted (with `existingDeliveries: 'keep'`, those that were new). */
  readonly insertedDeliveries: Set<string>
  /** Rows the entries removed (`deliveries.retired`, `endpoint.purged`), deleted by the write. */
  readonly removed: { readonly endpoints: Set<string>; readonly deliveries: Set<string> }
}

/** Folds entries over the base rows; returns the full set and which rows they touched. */
export function foldOver(base: WriteBase, entries: readonly LedgerEntry[]): { set: ProjectionSet; touched: Touched } {
  const set: ProjectionSet = {
    endpoints: new Map((base.endpoints ?? []).map((r) => [r.id, r])),
    deliveries: new Map((base.deliveries ?? []).map((r) => [r.id, r])),
  }
  const touched: Touched = { endpoints: new Set(), deliveries: new Set() }
  for (const e of entries) applyEntry(set, e, touched)
  return { set, touched }
}

/**
 * THE write primitive: every change of a projection (endpoints, deliveries) goes through here.
 * It folds `entries` over `base` with the core evolve functions, then in ONE statement inserts
 * the rows the entries created, updates the rows they changed (a row they left as it was is not
 * written), deletes the rows they removed (a retirement, a purge: only base rows, so only rows
 * the caller holds locked), and appends the entries — positions drawn after the row locks, so
 * for every row the ledger's order is the order its changes were applied, which replay relies
 * on. Then it refreshes the claim's queue heads of the endpoints it touched (endpoint-queue.ts).
 * The database checks the other half at commit: a projection row written without a ledger entry about it
 * fails the transaction (migration 0006).
 */
export async function ledgerWrite(trx: Trx, write: LedgerWrite): Promise<WriteResult> {
  const base = write.base ?? {}
  const appended = write.appended ?? []
  const { set, touched } = foldOver(base, [...appended, ...write.entries])
  const baseEndpoints = new Map((base.endpoints ?? []).map((r) => [r.id, r]))
  const baseDeliveries = new Map((base.deliveries ?? []).map((r) => [r.id, r]))
  const split = <R extends { id: string }>(ids: Set<string>, rows: Map<string, R>, before: Map<string, R>) => {
    const created: R[] = []
    const changed: R[] = []
    const removed: string[] = []
    for (const id of ids) {
      const row = rows.get(id)
      // A touched row the fold no longer holds was removed by it (retired, purged); one it
      // created and removed again within these entries never reaches the table.
      if (row === undefined) {
        if (before.has(id)) removed.push(id)
      } else if (!before.has(id)) created.push(row)
      else if (row !== before.get(id)) changed.push(row)
    }
    return { created, changed, removed }
  }
  const endpoints = split(touched.endpoints, set.endpoints, baseEndpoints)
  const deliveries = split(touched.deliveries, set.deliveries, baseDeliveries)
  const keep = write.existingDeliveries === 'keep'

  const ctes: RawBuilder<unknown>[] = []
  if (endpoints.created.length > 0) ctes.push(sql`w_endpoints_created as (${projectionInsertSql('endpoints', ENDPOINT_COLUMNS, endpoints.created)} returning id)`)
  if (endpoints.changed.length > 0) ctes.push(sql`w_endpoints_changed as (${projectionUpdateSql('endpoints', ENDPOINT_COLUMNS, endpoints.changed)})`)
  if (deliveries.created.length > 0) {
    const insert = projectionInsertSql('deliveries', DELIVERY_COLUMNS, deliveries.created)
    ctes.push(sql`w_deliveries_created as (${insert} ${keep ? sql`on conflict (id) do nothing` : sql``} returning id)`)
  }
  if (deliveries.changed.length > 0) ctes.push(sql`w_deliveries_changed as (${projectionUpdateSql('deliveries', DELIVERY_COLUMNS, deliveries.changed)})`)
  if (deliveries.removed.length > 0) ctes.push(sql`w_deliveries_removed as (${projectionDeleteSql('deliveries', deliveries.removed)})`)
  if (endpoints.removed.length > 0) ctes.push(sql`w_endpoints_removed as (${projectionDeleteSql('endpoints', endpoints.removed)})`)
  ctes.push(...(write.alongside ?? []).map((cte, i) => sql`w_alongside_${sql.raw(String(i))} as (${cte})`))

  // With `keep`, an entry about a created delivery is appended only if its insert happened.
  const conditional = keep && deliveries.created.length > 0 ? new Set(deliveries.created.map((d) => d.id)) : null
  const append =
    write.entries.length > 0
      ? ledgerInsertSql(write.entries, conditional ? { onlyIfIn: { ids: conditional, cte: 'w_deliveries_created' } } : undefined)
      : null
  const inserted = deliveries.created.length > 0 ? sql`(select coalesce(array_agg(id), '{}') from w_deliveries_created)` : sql`'{}'::uuid[]`
  if (ctes.length === 0 && !append && !write.notify) {
    return { endpoints: new Map(), deliveries: new Map(), insertedDeliveries: new Set(), removed: { endpoints: new Set(), deliveries: new Set() } }
  }
  const withClause = (extra: RawBuilder<unknown>[]) => {
    const all = [...ctes, ...extra]
    return all.length > 0 ? sql`with ${sql.join(all)}` : sql``
  }
  const notify = write.notify
  const notifySql = !notify
    ? sql``
    : notify.when === 'deliveries_inserted'
      ? deliveries.created.length > 0
        ? sql`, (select pg_notify(${channelSql(notify.channel)}, '') where exists (select 1 from w_deliveries_created)) as notified`
        : sql``
      : sql`, pg_notify(${channelSql(notify.channel)}, '') as notified`
  const result = await sql<{ inserted: string[] }>`
    ${withClause(append ? [sql`w_ledger as (${append})`] : [])}
    select ${inserted} as inserted ${notifySql}
  `.execute(trx)
  // A second statement: it must see the rows the first one wrote.
  await endpointQueueRefresh(trx, endpointsWithMovedHeads(endpoints, baseEndpoints, deliveries), write.queueMerge)
  const insertedIds = new Set(result.rows[0]?.inserted ?? [])
  const written = <R extends { id: string }>(parts: { created: R[]; changed: R[] }, onlyInserted: boolean) =>
    new Map([...parts.changed, ...parts.created.filter((r) => !onlyInserted || insertedIds.has(r.id))].map((r) => [r.id, r]))
  return {
    endpoints: written(endpoints, false),
    deliveries: written(deliveries, keep),
    insertedDeliveries: keep ? insertedIds : new Set(deliveries.created.map((d) => d.id)),
    removed: { endpoints: new Set(endpoints.removed), deliveries: new Set(deliveries.removed) },
  }
}
