import {
  applyEntry,
  type DeliveryRow,
  type EndpointRow,
  type LedgerEntry,
  type ProjectionSet,
  type Touched,
} from '@hookledger/core'
import { sql, type RawBuilder } from 'kysely'
import type { Db } from './database/database.js'
import { rowPatch, rowsForJson } from './projection-write.js'
import type { QueueMerge } from './delivery/endpoint-queue.js'

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
  /** Events this write decided (fan-out, a test event): marked fanned out at `at`. */
  readonly fannedOut?: { readonly events: readonly { readonly owner_id: string; readonly id: string }[]; readonly at: Date }
  /** The hashes of tokens this write's `token.issued` entries issue (never in the ledger), by token id, hex. */
  readonly tokenHashes?: Readonly<Record<string, string>>
  /** The owner every row and entry belongs to (default: theirs, when they agree; `*` when they span owners). */
  readonly owner?: string
  /**
   * How the claim's queue heads of the touched endpoints are refreshed (endpoint-queue.ts):
   * `assign` (default) when the caller holds those endpoints `for update`, `earliest` for
   * fan-out, which holds them `for share`.
   */
  readonly queueMerge?: QueueMerge
  /** NOTIFY on commit, on this install's channel (channelSql): always, or only when the write inserted deliveries. */
  readonly notify?: { readonly channel: 'events' | 'deliveries'; readonly when?: 'always' | 'deliveries_inserted' }
  /**
   * The endpoint leases a base the caller did not lock assumes (the settle that writes on the
   * rows its claim left). An endpoint's version (`updated_at`) does not move with its lease, so
   * the write function cannot tell a lease that passed to another delivery; these are locked
   * in id order, in the same statement and before the write, and the write runs only if every
   * one is still as given. Otherwise nothing is written and `LeaseMovedError` is thrown.
   */
  readonly leasesHeld?: readonly Pick<EndpointRow, 'id' | 'busy_delivery_id' | 'busy_until'>[]
  /**
   * A query whose rows come back with the write (`WriteResult.alongside`), read in the same
   * statement on the snapshot it started from — before the write's changes — so a caller that
   * needs nothing locked writes and reads in one round trip (the settle's look-ahead).
   */
  readonly alongside?: RawBuilder<unknown>
  /**
   * The transaction commits as the session would (its `synchronous_commit` as RESET would make
   * it), whatever an earlier statement of it set: the fan-out commits without waiting for its
   * WAL flush, but not when it claimed too, since a claim must be durable before its POST.
   */
  readonly durableCommit?: boolean
}

/** A write's `leasesHeld` no longer hold: nothing was written; read the rows again, locked. */
export class LeaseMovedError extends Error {
  readonly code = 'lease_moved'
  constructor() {
    super('an endpoint lease the write assumed has moved since it was read')
  }
}

/** What a write changed. */
export interface WriteResult {
  readonly endpoints: Map<string, EndpointRow>
  readonly deliveries: Map<string, DeliveryRow>
  /** Deliveries inserted (with `existingDeliveries: 'keep'`, those that were new). */
  readonly insertedDeliveries: Set<string>
  /** Rows the entries removed (`deliveries.retired`, `endpoint.purged`), deleted by the write. */
  readonly removed: { readonly endpoints: Set<string>; readonly deliveries: Set<string> }
  /** The rows of `alongside`, when given. */
  readonly alongside: readonly Record<string, unknown>[]
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
 * THE write primitive: every change of a projection (endpoints, deliveries) and of the security
 * tables goes through here. It folds `entries` over `base` with the core `evolve` functions,
 * then hands the rows the entries created, changed (with the version the caller read) and
 * removed, and the entries, to ONE call of `hookledger_write` (a SECURITY DEFINER function, the
 * service role's only door for writes; db/migrations/0001_baseline.sql): it checks each row
 * against its entries, writes the rows, appends the entries (positions drawn after the row
 * locks, so for every row the ledger's order is the order its changes were applied, which
 * replay relies on), refreshes the claim's queue heads of the endpoints it touched and sends
 * the NOTIFY. One round trip.
 */
export async function ledgerWrite(trx: Db, write: LedgerWrite): Promise<WriteResult> {
  const base = write.base ?? {}
  const { set, touched } = foldOver(base, write.entries)
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
  if (endpoints.created.length + endpoints.changed.length + endpoints.removed.length + deliveries.created.length +
      deliveries.changed.length + deliveries.removed.length + write.entries.length === 0 && !write.notify && !write.fannedOut) {
    return { endpoints: new Map(), deliveries: new Map(), insertedDeliveries: new Set(), removed: { endpoints: new Set(), deliveries: new Set() }, alongside: [] }
  }
  // Each changed row's version as the caller read it (its updated_at then), which the function's
  // update checks: a row changed since is refused, never overwritten.
  const versions = <R extends { id: string; updated_at: Date }>(rows: R[], before: Map<string, R>) =>
    rows.map((r) => before.get(r.id)!.updated_at.toISOString())
  // A changed row travels as its id and the columns that changed (the function lays them over
  // the row as stored, whose version it checks).
  const patches = <R extends { id: string }>(rows: R[], before: Map<string, R>) => rows.map((r) => rowPatch(r, before.get(r.id)!))
  // Rows with their bytes as `\\x…` hex (what jsonb_populate_recordset reads for bytea); dates,
  // the entries' too, render as ISO strings.
  const payload = {
    entries: write.entries,
    endpoints: { created: rowsForJson(endpoints.created), changed: patches(endpoints.changed, baseEndpoints), removed: endpoints.removed, versions: versions(endpoints.changed, baseEndpoints) },
    deliveries: { created: rowsForJson(deliveries.created), changed: patches(deliveries.changed, baseDeliveries), removed: deliveries.removed, versions: versions(deliveries.changed, baseDeliveries) },
    ...(keep ? { keep: true } : {}),
    ...(write.queueMerge ? { queue_merge: write.queueMerge } : {}),
    ...(write.notify ? { notify: write.notify } : {}),
    ...(write.fannedOut ? { fanned_out: { events: write.fannedOut.events, at: write.fannedOut.at.toISOString() } } : {}),
    ...(write.tokenHashes ? { token_hashes: write.tokenHashes } : {}),
  }
  const owner = write.owner ?? writeOwner(write.entries, [...endpoints.created, ...endpoints.changed, ...deliveries.created, ...deliveries.changed])
  const call = sql`hookledger_write(${owner}, ${JSON.stringify(payload)}::jsonb)`
  // How the function's statements are planned for this call (writePlanMode), set for this
  // statement's transaction in the same round trip, before the call.
  const rows = endpoints.created.length + endpoints.changed.length + deliveries.created.length + deliveries.changed.length
  // A null value is RESET (for this transaction: SET LOCAL … TO DEFAULT), the session's value as it
  // connected; reading it from pg_settings instead cost 0.46 ms a call (the view renders every setting).
  const commitMode = write.durableCommit ? sql`, set_config('synchronous_commit', null, true)` : sql``
  const planMode = sql`(select set_config('plan_cache_mode', ${writePlanMode(rows + write.entries.length)}, true)${commitMode}) plan_mode`
  const leases = write.leasesHeld
  const head = leases === undefined
    ? sql`select ${call} as result from ${planMode}`
    : sql`
        select ${call} as result from ${planMode}, (
          select count(*) as held from (
            select 1 from endpoints e
            join jsonb_to_recordset(${JSON.stringify(leases)}::jsonb) as l(id uuid, busy_delivery_id uuid, busy_until timestamptz) on l.id = e.id
            where e.id = any(${leases.map((l) => l.id)}::uuid[])
              and e.busy_delivery_id is not distinct from l.busy_delivery_id and e.busy_until is not distinct from l.busy_until
            order by e.id for update of e
          ) locked
        ) leases where leases.held = ${leases.length}
      `
  type Row = { result: { inserted: string[] } } & Record<string, unknown>
  const result = await (write.alongside === undefined
    ? sql<Row>`${head}`
    : sql<Row>`with w as materialized (${head}) select w.result, a.* from w left join lateral (${write.alongside}) a on true`
  ).execute(trx)
  if (leases !== undefined && result.rows.length === 0) throw new LeaseMovedError()
  const insertedIds = new Set(result.rows[0]?.result.inserted ?? [])
  const written = <R extends { id: string }>(parts: { created: R[]; changed: R[] }, onlyInserted: boolean) =>
    new Map([...parts.changed, ...parts.created.filter((r) => !onlyInserted || insertedIds.has(r.id))].map((r) => [r.id, r]))
  return {
    endpoints: written(endpoints, false),
    deliveries: written(deliveries, keep),
    insertedDeliveries: keep ? insertedIds : new Set(deliveries.created.map((d) => d.id)),
    removed: { endpoints: new Set(endpoints.removed), deliveries: new Set(deliveries.removed) },
    alongside: write.alongside === undefined ? [] : result.rows.filter((r) => r['id'] != null).map(({ result: _result, ...row }) => row),
  }
}

/** Writes of at most this many rows and entries plan the function's statements generically. */
export const GENERIC_PLAN_MAX_ITEMS = 256

/**
 * How hookledger_write's statements are planned for a write of `items` rows and entries.
 * PL/pgSQL caches a plan per statement but keeps making one per call with the call's values
 * while that looks cheaper, and for the function's array-of-rows statements it always did: with
 * the few rows a claim or a settle carries, planning was half of the call (the endpoint queue's
 * upsert 0.77 ms to plan, 0.14 ms to run; a write 3.1–3.2 ms, 1.7–1.8 ms planned once:
 * `npm run bench -- --only=latency --stats`). Each of them reaches rows by key, so a small
 * write's generic plan is the plan. A large one (a fan-out of 10,000 deliveries) is different:
 * its generic plan inserted the delivery states in 362 ms against 40 ms planned for its size
 * (`--only=fanout-wide --stats`), so it keeps PostgreSQL's choice.
 */
export function writePlanMode(items: number): 'force_generic_plan' | 'auto' {
  return items <= GENERIC_PLAN_MAX_ITEMS ? 'force_generic_plan' : 'auto'
}

/** The owner a write's rows and entries share, or `*` when they span owners. */
function writeOwner(entries: readonly LedgerEntry[], rows: readonly { owner_id: string }[]): string {
  const owners = new Set<string>([...entries.map((e) => e.owner_id), ...rows.map((r) => r.owner_id)])
  return owners.size === 1 ? [...owners][0]! : '*'
}
