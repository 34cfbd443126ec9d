/**
 * Owners as first-class objects (migration 0009): their rows, usage, and the operator's changes
 * — limits, suspension — each a ledger entry (`owner.limits_set|suspended|resumed`) applied to
 * `owners` by hookledger_write, so replay rebuilds the table. An owner without a row has the
 * defaults (core's ownerDefaults); the first change makes its row.
 */
import { sql, type RawBuilder } from 'kysely'
import {
  endpointQuotaRefusal,
  ownerDefaults,
  ownerLimitsChange,
  ownerResumeDecision,
  ownerSuspendDecision,
  type LedgerEntryOf,
  type LedgerKind,
  type LedgerPayloads,
  type OwnerLimitsPatch,
  type OwnerRow,
} from '@hookledger/core'
import type { Db, Trx } from './database/database.js'
import { ledgerWrite } from './ledger-write.js'
import { decodeCursorAs, encodeCursor, type Page } from './read-models.js'

/** Who and when, for an owner change. */
export interface OwnerCommandContext {
  readonly now: Date
  readonly actor: string
}

/** What an owner uses: endpoints (not deleted), deliveries waiting or running, and the last 24 h. */
export interface OwnerUsage {
  readonly endpoints: number
  readonly backlog: number
  readonly deliveries_24h: number
  readonly attempts_24h: number
  /** The counts that are lower bounds: they reached the cap they were counted up to (`ownersPage`). */
  readonly at_least: readonly CappedUsage[]
}

/** The usage counts a page counts only up to `OWNER_PAGE_COUNT_CAP`. */
export const CAPPED_USAGE = ['backlog', 'deliveries_24h', 'attempts_24h'] as const
export type CappedUsage = (typeof CAPPED_USAGE)[number]

/**
 * A page of owners counts each one's backlog and last day up to this, and says which counts
 * reached it (`at_least`): counted exactly, each owner listed cost its whole day's traffic
 * (~350 ms for an owner of 1,000,000 deliveries a day, docs/scaling.md), so a page of busy
 * owners took seconds. One owner (`ownersWithUsage` without a cap, `owners.get`) is exact.
 */
export const OWNER_PAGE_COUNT_CAP = 1_000

export interface OwnerWithUsage {
  readonly owner: OwnerRow
  readonly usage: OwnerUsage
}

const OWNER_COLUMNS = sql.raw(
  `id, weight, publish_per_second, publish_burst, max_endpoints, max_in_flight, suspended_at, suspended_reason, created_at, updated_at`,
)

/** The owner as stored, or its defaults. */
export async function ownerRead(db: Db | Trx, id: string): Promise<OwnerRow> {
  const row = (await sql<OwnerRow>`select ${OWNER_COLUMNS} from owners where id = ${id}`.execute(db)).rows[0]
  return row ?? ownerDefaults(id)
}

/** An owner id page's cursor: the last id it held. */
const encodeOwnerCursor = (id: string) => encodeCursor(['owner', id])
const decodeOwnerCursor = (cursor: string): string =>
  decodeCursorAs(cursor, (v) => (v.length === 2 && v[0] === 'owner' && typeof v[1] === 'string' ? v[1] : undefined))

/**
 * The owners known to the installation (a row of its own, or a token, endpoint or delivery
 * naming it), in id order, `limit` at a time after `cursor`, each with its usage at `now`.
 *
 * Each source gives its next distinct owners through an index led by the owner (a loose index
 * scan: one descent per owner), so a page costs its own owners, not the history: the list was
 * one page of every owner, and the union that found them read every delivery ever made.
 */
export async function ownersPage(db: Db | Trx, now: Date, params: { limit: number; cursor?: string | undefined }): Promise<Page<OwnerWithUsage>> {
  const after = params.cursor === undefined ? '' : decodeOwnerCursor(params.cursor)
  // One more than the page (is there a next one?) and one for the operators' '*', never listed.
  const take = params.limit + 2
  const ids = (
    await sql<{ id: string }>`
      with recursive
        by_endpoint(owner_id) as (
          (select owner_id from endpoints where deleted_at is null and owner_id > ${after} order by owner_id limit 1)
          union all
          select (select e.owner_id from endpoints e where e.deleted_at is null and e.owner_id > b.owner_id order by e.owner_id limit 1)
          from by_endpoint b where b.owner_id is not null),
        by_delivery(owner_id) as (
          (select owner_id from delivery_origins where owner_id > ${after} order by owner_id limit 1)
          union all
          select (select d.owner_id from delivery_origins d where d.owner_id > b.owner_id order by d.owner_id limit 1)
          from by_delivery b where b.owner_id is not null),
        known(id) as (
          (select id from owners where id > ${after} order by id limit ${take})
          union (select owner_id from by_endpoint where owner_id is not null limit ${take})
          union (select owner_id from by_delivery where owner_id is not null limit ${take})
          -- A deleted endpoint's owner with no delivery is still known by the endpoint's row.
          union (select distinct owner_id from endpoints where deleted_at is not null and owner_id > ${after} order by owner_id limit ${take})
          union (select distinct owner_id from api_tokens where owner_id > ${after} order by owner_id limit ${take}))
      select id from known where id <> '*' order by id limit ${params.limit + 1}
    `.execute(db)
  ).rows.map((r) => r.id)
  const page = ids.slice(0, params.limit)
  const data = await ownersWithUsage(db, now, page, { countUpTo: OWNER_PAGE_COUNT_CAP })
  return { data, next_cursor: ids.length > params.limit ? encodeOwnerCursor(page[page.length - 1]!) : null }
}

/**
 * The owners `ids` that are known (see `ownersPage`), with their usage at `now`. Ordered by id.
 * With `countUpTo`, the backlog and the day's counts stop there (`at_least` names those that did).
 */
export async function ownersWithUsage(
  db: Db | Trx,
  now: Date,
  ids: readonly string[],
  options: { readonly countUpTo?: number } = {},
): Promise<OwnerWithUsage[]> {
  if (ids.length === 0) return []
  const since = new Date(now.getTime() - 24 * 3600 * 1000)
  const upTo = options.countUpTo
  // Counted to one past the cap, so a count above it is told from one exactly at it.
  const bounded = (rows: RawBuilder<unknown>) =>
    upTo === undefined ? sql`(select count(*) from (${rows}) r)` : sql`(select count(*) from (${rows} limit ${upTo + 1}) r)`
  const rows = (
    await sql<{ id: string; endpoints: string; backlog: string; deliveries_24h: string; attempts_24h: string }>`
      select x.id,
        (select count(*) from endpoints e where e.owner_id = x.id and e.deleted_at is null) as endpoints,
        -- Through the owner's endpoints and the live index (waiting and running, migration 0021):
        -- the settled history is never read.
        ${bounded(sql`select 1 from endpoints e join delivery_states s on s.endpoint_id = e.id
          where e.owner_id = x.id and s.next_attempt_at is not null`)} as backlog,
        ${bounded(sql`select 1 from delivery_origins d where d.owner_id = x.id and d.created_at >= ${since}`)} as deliveries_24h,
        -- Per endpoint, a range scan of ledger_endpoint_attempts_idx (endpoint_id, occurred_at): the
        -- day's rows only, not a scan of the whole ledger per owner.
        ${bounded(sql`select 1 from endpoints e join ledger l on l.endpoint_id = e.id and l.kind = 'delivery.attempted' and l.occurred_at >= ${since}
          where e.owner_id = x.id and l.owner_id = x.id`)} as attempts_24h
      from unnest(${[...ids]}::text[]) x(id)
      where x.id <> '*' and (
        exists (select 1 from owners o where o.id = x.id)
        or exists (select 1 from endpoints e where e.owner_id = x.id and e.deleted_at is null)
        or exists (select 1 from endpoints e where e.deleted_at is not null and e.owner_id = x.id)
        or exists (select 1 from delivery_origins d where d.owner_id = x.id)
        or exists (select 1 from api_tokens t where t.owner_id = x.id))
      order by x.id
    `.execute(db)
  ).rows
  const stored = new Map(
    (await sql<OwnerRow>`select ${OWNER_COLUMNS} from owners where id = any(${rows.map((r) => r.id)}::text[])`.execute(db)).rows.map((r) => [r.id, r]),
  )
  const capped = (n: string) => (upTo !== undefined && Number(n) > upTo ? upTo : Number(n))
  return rows.map((r) => ({
    owner: stored.get(r.id) ?? ownerDefaults(r.id),
    usage: {
      endpoints: Number(r.endpoints),
      backlog: capped(r.backlog),
      deliveries_24h: capped(r.deliveries_24h),
      attempts_24h: capped(r.attempts_24h),
      at_least: CAPPED_USAGE.filter((k) => upTo !== undefined && Number(r[k]) > upTo),
    },
  }))
}

function ownerEntry<K extends LedgerKind & `owner.${string}`>(kind: K, owner: string, ctx: OwnerCommandContext, payload: LedgerPayloads[K]): LedgerEntryOf<K> {
  return { kind, occurred_at: ctx.now, owner_id: owner, endpoint_id: null, delivery_id: null, event_id: null, actor: ctx.actor, payload } as LedgerEntryOf<K>
}

/** One owner change, serialized per owner (a transaction-scoped advisory lock: its row may not exist yet). */
async function ownerChange(db: Db, id: string, decide: (row: OwnerRow) => LedgerEntryOf<LedgerKind & `owner.${string}`> | null): Promise<{ owner: OwnerRow; changed: boolean }> {
  return db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(hashtextextended('hookledger.owner:' || ${id}, 0))`.execute(trx)
    const entry = decide(await ownerRead(trx, id))
    if (entry !== null) await ledgerWrite(trx, { entries: [entry], owner: id })
    return { owner: await ownerRead(trx, id), changed: entry !== null }
  })
}

/** Sets any subset of the owner's limits (omitted keep their value, null clears). */
export function ownerLimitsSet(db: Db, id: string, ctx: OwnerCommandContext, patch: OwnerLimitsPatch) {
  return ownerChange(db, id, (row) => {
    const change = ownerLimitsChange(row, patch)
    return Object.keys(change).length === 0 ? null : ownerEntry('owner.limits_set', id, ctx, { limits: change })
  })
}

/** Suspends the owner: its publishes are refused, its deliveries wait (the claim reads suspended_at). */
export function ownerSuspend(db: Db, id: string, ctx: OwnerCommandContext, reason: string) {
  return ownerChange(db, id, (row) => {
    const decision = ownerSuspendDecision(row, reason)
    return decision === null ? null : ownerEntry('owner.suspended', id, ctx, decision)
  })
}

/** Resumes a suspended owner. */
export function ownerResume(db: Db, id: string, ctx: OwnerCommandContext) {
  return ownerChange(db, id, (row) => (ownerResumeDecision(row) ? ownerEntry('owner.resumed', id, ctx, {}) : null))
}

/**
 * Creating an endpoint of `owner` in `trx`: the refusal's message when it already has its
 * `max_endpoints`, else null. Taken under the owner's change lock, so two creates (or a create
 * and a lowered limit) cannot both pass the count.
 */
export async function endpointQuotaCheck(trx: Trx, owner: string): Promise<string | null> {
  const limit = (await sql<{ max_endpoints: number | null }>`select max_endpoints from owners where id = ${owner}`.execute(trx)).rows[0]
  if (limit === undefined || limit.max_endpoints === null) return null
  await sql`select pg_advisory_xact_lock(hashtextextended('hookledger.owner:' || ${owner}, 0))`.execute(trx)
  const count = (await sql<{ n: string }>`select count(*) as n from endpoints where owner_id = ${owner} and deleted_at is null`.execute(trx)).rows[0]!.n
  const after = await ownerRead(trx, owner)
  return endpointQuotaRefusal(owner, after.max_endpoints, Number(count))
}
