import {
  applyEntry,
  attemptRowOf,
  type DeliveryRow,
  type EndpointRow,
  type LedgerEntry,
  type ProjectionSet,
  type Touched,
} from '@hookledger/core'
import type { Trx } from './database.js'
import { ledgerAppend } from './ledger-append.js'
import {
  ATTEMPT_COLUMNS,
  DELIVERY_COLUMNS,
  ENDPOINT_COLUMNS,
  projectionUpsert,
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
 * changed projection row, then appends the entries and the attempt-history rows they imply —
 * all in the caller's transaction. Every owner command goes through here; the worker's hot
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
  await attemptsInsert(trx, entries, positions)
  return { endpoints, deliveries, positions }
}

/** Inserts the attempt-history rows of `delivery.attempted` entries, keyed by their position. */
export async function attemptsInsert(
  trx: Trx,
  entries: readonly LedgerEntry[],
  positions: readonly string[],
): Promise<void> {
  const rows = entries.flatMap((e, i) => {
    const row = attemptRowOf(e, positions[i]!)
    return row ? [row] : []
  })
  await projectionUpsert(trx, 'delivery_attempts', ATTEMPT_COLUMNS, 'ledger_position', rows)
}
