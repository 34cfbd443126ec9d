/**
 * Who has work ready, owner by owner (issue 24 item 1): the claim's candidates for fair share,
 * and the dispatcher's look, when every slot is taken, at whether an owner waits below its share.
 *
 * Owners are walked with a loose index scan over `endpoint_queue (owner_id, ready_at)` (migration
 * 0010): one index descent per owner with waiting work, so the cost follows the number of such
 * owners, never their endpoints or backlog. A suspended owner is left out (its deliveries wait);
 * an owner at its `max_in_flight` (endpoints leased now, across every worker) gets no candidates.
 */
import { sql, type RawBuilder } from 'kysely'
import type { FairCandidate } from '@hookledger/core'
import type { Db, Trx } from '../database/database.js'
import { transactionIdleLimitSql } from '../database/transaction-idle-limit.js'

/** An owner with ready endpoints, as the claim and the dispatcher weigh it. */
export interface ReadyOwner {
  readonly owner_id: string
  readonly weight: number
  /** How many more endpoints it may lease now (its max_in_flight less those leased), or null: no limit. */
  readonly room: number | null
  /** Its endpoints ready now, counted up to READY_COUNT_CAP: how many slots it wants. */
  readonly ready: number
}

/** An owner as fair share weighs it. */
export type OwnerWeight = Pick<ReadyOwner, 'owner_id' | 'weight'>

/** Ready endpoints are counted per owner up to this (a worker's slots are no more). */
export const READY_COUNT_CAP = 256

/** The owners with waiting work, one index descent each (a recursive loose index scan). */
const ownersWithWaitingWork = sql`
  with recursive walk(owner_id) as (
    (select q.owner_id from endpoint_queue q where q.ready_at is not null order by q.owner_id limit 1)
    union all
    select (select q.owner_id from endpoint_queue q where q.owner_id > w.owner_id and q.ready_at is not null order by q.owner_id limit 1)
    from walk w where w.owner_id is not null
  )
  select owner_id from walk where owner_id is not null
`

/** Of those, the ones not suspended with an endpoint ready at `now`, with their weight and room. */
function readyOwners(now: Date, ownersCap: number): RawBuilder<ReadyOwner & { first_ready: Date }> {
  return sql<ReadyOwner & { first_ready: Date }>`
    select w.owner_id, coalesce(o.weight, 1) as weight,
      case when o.max_in_flight is null then null else greatest(0, o.max_in_flight - (
        select count(*) from endpoints e where e.owner_id = w.owner_id and e.deleted_at is null and e.busy_until > ${now}
      ))::int end as room,
      f.ready_at as first_ready,
      (select count(*) from (
        select 1 from endpoint_queue q where q.owner_id = w.owner_id and q.ready_at <= ${now} limit ${READY_COUNT_CAP}
      ) c)::int as ready
    from (${ownersWithWaitingWork}) w
    left join owners o on o.id = w.owner_id
    cross join lateral (
      select q.ready_at from endpoint_queue q
      where q.owner_id = w.owner_id and q.ready_at is not null
      order by q.ready_at limit 1
    ) f
    where f.ready_at <= ${now} and o.suspended_at is null
    order by f.ready_at, w.owner_id
    limit ${ownersCap}
  `
}

/** At most this many owners are weighed per claim (the earliest ready first); the rest wait a pass. */
export const CLAIM_OWNERS_CAP = 1_000

/**
 * The claim's candidates: each ready owner's earliest ready endpoints, at most `perOwner` (and
 * at most its room), with the owners' weights, and which of them keep a strict line (`strict`:
 * the claim leaves the strict line out of its heads statement when none does). Read without
 * locks: the claim locks what it picks.
 */
export async function fairClaimCandidates(
  trx: Trx,
  now: Date,
  perOwner: number,
): Promise<{ candidates: FairCandidate[]; owners: ReadyOwner[]; strict: ReadonlySet<string> }> {
  const { rows } = await sql<ReadyOwner & { endpoint_id: string | null; ready_at: Date | null; strict: boolean | null }>`
    with ready as materialized (
      select r.*, sum(r.weight) over () as total_weight from (${readyOwners(now, CLAIM_OWNERS_CAP)}) r
    )
    select r.owner_id, r.weight, r.room, r.ready, c.endpoint_id, c.ready_at,
      (select e.ordering = 'strict' from endpoints e where e.id = c.endpoint_id) as strict
    -- The claim's first statement: its transaction's idle limit, without a round trip of its own
    -- (transaction-idle-limit.ts; nothing is locked before it, nor when nothing is ready).
    from (select ${transactionIdleLimitSql()}) idle_limit,
    ready r
    left join lateral (
      select q.endpoint_id, q.ready_at from endpoint_queue q
      where q.owner_id = r.owner_id and q.ready_at <= ${now}
      order by q.ready_at, q.endpoint_id
      -- Twice its weighted share of the slots (and one more) is all fair share can give it in a
      -- pass, so many owners do not read many rows each; what is left goes next pass.
      limit least(${perOwner}, coalesce(r.room, ${perOwner}), ceil(2.0 * ${perOwner} * r.weight / r.total_weight)::int + 1)
    ) c on true
  `.execute(trx)
  const owners = new Map<string, ReadyOwner>()
  const candidates: FairCandidate[] = []
  const strict = new Set<string>()
  for (const r of rows) {
    owners.set(r.owner_id, { owner_id: r.owner_id, weight: r.weight, room: r.room, ready: r.ready })
    if (r.endpoint_id !== null) candidates.push({ endpoint_id: r.endpoint_id, owner_id: r.owner_id, ready_at: r.ready_at! })
    if (r.endpoint_id !== null && r.strict) strict.add(r.endpoint_id)
  }
  return { candidates, owners: [...owners.values()], strict }
}

/** What the dispatcher needs to know while every slot is taken. */
export interface OwnersWaiting {
  /** Owners with an endpoint ready now, not suspended, with room under their max_in_flight. */
  readonly waiting: ReadyOwner[]
  /** Of the owners named, those suspended: their turns stop after the delivery they are on. */
  readonly suspended: string[]
}

/**
 * The look the dispatcher takes while full: who waits, and which of the owners it is serving
 * were suspended since. One statement.
 */
export async function ownersWaiting(db: Db, now: Date, serving: readonly string[]): Promise<OwnersWaiting> {
  const { rows } = await sql<{ owner_id: string; weight: number; room: number | null; ready: number; suspended: boolean }>`
    select r.owner_id, r.weight, r.room, r.ready, false as suspended from (${readyOwners(now, CLAIM_OWNERS_CAP)}) r
    where r.room is null or r.room > 0
    union all
    select o.id, o.weight, null, 0, true from owners o where o.id = any(${[...serving]}::text[]) and o.suspended_at is not null
  `.execute(db)
  return {
    waiting: rows.filter((r) => !r.suspended).map(({ owner_id, weight, room, ready }) => ({ owner_id, weight, room, ready })),
    suspended: rows.filter((r) => r.suspended).map((r) => r.owner_id),
  }
}

/** Of these owners, the ones suspended now. */
export async function ownersSuspended(db: Db, owners: readonly string[]): Promise<string[]> {
  if (owners.length === 0) return []
  const { rows } = await sql<{ id: string }>`select o.id from owners o where o.id = any(${[...owners]}::text[]) and o.suspended_at is not null`.execute(db)
  return rows.map((r) => r.id)
}
