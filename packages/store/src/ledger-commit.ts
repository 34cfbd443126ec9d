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
import { ledgerAppend, ledgerInsertSql } from './ledger-append.js'
import {
  DELIVERY_COLUMNS,
  ENDPOINT_COLUMNS,
  projectionUpsert,
  projectionUpsertSql,
} from './projection-write.js'

/** Current rows (locked by the caller, or known absent) that the entries start from. */
export interface CommitBase {
  readonly endpoints?: readonly EndpointRow[]
  readonly deliveries?: readonly DeliveryRow[]
}

/** What a commit wrote. */
export interface CommitResult {
  readonly endpoints: Map<string, EndpointRow>
  readonly deliveries: Map<string, DeliveryRow>
  readonly positions: string[]
}

/** Folds entries over the base rows; returns the full set and which rows changed. */
export function foldOver(base: CommitBase, entries: readonly LedgerEntry[]): { set: ProjectionSet; touched: Touched } {
  const set: ProjectionSet = {
    endpoints: new Map((base.endpoints ?? []).map((r) => [r.id, r])),
    deliveries: new Map((base.deliveries ?? []).map((r) => [r.id, r])),
  }
  const touched: Touched = { endpoints: new Set(), deliveries: new Set() }
  for (const e of entries) applyEntry(set, e, touched)
  return { set, touched }
}

/**
 * The one writer: folds `entries` over `base` with the core evolve functions, writes every
 * changed projection row, then appends the entries — all in the caller's transaction. (The
 * attempt history is a view over the `delivery.attempted` entries.) Every owner command goes through here; the worker's hot
 * paths use the same pieces with a claim guard.
 */
export async function ledgerCommit(
  trx: Trx,
  base: CommitBase,
  entries: readonly LedgerEntry[],
): Promise<CommitResult> {
  const { set, touched } = foldOver(base, entries)
  const endpoints = new Map([...touched.endpoints].map((id) => [id, set.endpoints.get(id)!]))
  const deliveries = new Map([...touched.deliveries].map((id) => [id, set.deliveries.get(id)!]))
  await projectionUpsert(trx, 'endpoints', ENDPOINT_COLUMNS, 'id', [...endpoints.values()])
  await projectionUpsert(trx, 'deliveries', DELIVERY_COLUMNS, 'id', [...deliveries.values()])
  const positions = await ledgerAppend(trx, entries)
  return { endpoints, deliveries, positions }
}

/**
 * The writes of a commit whose projection rows the caller already holds locked (the claim and
 * the settle lock them first): the changed rows and the ledger entries in ONE statement
 * (data-modifying CTEs), so a hot-path transaction pays one round trip for its writes. The
 * locks were taken before, so positions are still drawn after them.
 */
export async function lockedWrite(
  trx: Trx,
  rows: { readonly endpoints?: readonly EndpointRow[]; readonly deliveries?: readonly DeliveryRow[] },
  entries: readonly LedgerEntry[],
): Promise<void> {
  const ctes: RawBuilder<unknown>[] = []
  if (rows.endpoints && rows.endpoints.length > 0) {
    ctes.push(sql`w_endpoints as (${projectionUpsertSql('endpoints', ENDPOINT_COLUMNS, 'id', rows.endpoints)})`)
  }
  if (rows.deliveries && rows.deliveries.length > 0) {
    ctes.push(sql`w_deliveries as (${projectionUpsertSql('deliveries', DELIVERY_COLUMNS, 'id', rows.deliveries)})`)
  }
  let main: RawBuilder<unknown>
  if (entries.length > 0) {
    main = ledgerInsertSql(entries)
  } else if (ctes.length > 0) {
    main = sql`select 1`
  } else {
    return
  }
  await (ctes.length > 0 ? sql`with ${sql.join(ctes)} ${main}` : main).execute(trx)
}
