import { sql } from 'kysely'
import type { Db } from '../database/database.js'

/** One owner's share of the queue, as the per-owner instruments show it (read on a scrape). */
export interface OwnerQueueStats {
  readonly owner_id: string
  /** Endpoints not deleted. */
  readonly endpoints: number
  /** Waiting deliveries (pending or retryable), due or not. */
  readonly waiting: number
  /** Waiting deliveries whose time has come. */
  readonly due: number
  /** Deliveries claimed and not settled (the worker slots the owner holds). */
  readonly in_flight: number
}

export interface OwnersQueueStats {
  /** Every owner with an endpoint or unfinished work, in no particular order. */
  readonly owners: readonly OwnerQueueStats[]
  /** Owners suspended now (`owners.suspend`). */
  readonly suspended: number
}

/**
 * One round trip over the unfinished deliveries (pending, retryable, running) and the live
 * endpoints, grouped by owner. It follows the backlog, not the history,
 * and the instruments cache it like the queue figures.
 */
export async function ownersQueueStats(db: Db, now: Date): Promise<OwnersQueueStats> {
  const { rows } = await sql<{ owners: { owner_id: string; endpoints: number; waiting: number; due: number; in_flight: number }[]; suspended: string }>`
    with per_endpoint as (
      -- The live index's rows (migration 0021): settled history is never read.
      select endpoint_id,
        count(*) filter (where state in ('pending', 'retryable')) as waiting,
        count(*) filter (where state in ('pending', 'retryable') and next_attempt_at <= ${now}) as due,
        count(*) filter (where state = 'running') as in_flight
      from delivery_states where next_attempt_at is not null group by endpoint_id
    ), work as (
      select e.owner_id, sum(p.waiting) as waiting, sum(p.due) as due, sum(p.in_flight) as in_flight
      from per_endpoint p join endpoints e on e.id = p.endpoint_id
      group by e.owner_id
    ), live as (
      select owner_id, count(*) as endpoints from endpoints where deleted_at is null group by owner_id
    )
    select
      coalesce((select jsonb_agg(jsonb_build_object('owner_id', coalesce(w.owner_id, l.owner_id),
          'endpoints', coalesce(l.endpoints, 0), 'waiting', coalesce(w.waiting, 0), 'due', coalesce(w.due, 0),
          'in_flight', coalesce(w.in_flight, 0)))
        from work w full join live l on l.owner_id = w.owner_id), '[]'::jsonb) as owners,
      (select count(*) from owners where suspended_at is not null) as suspended
  `.execute(db)
  const r = rows[0]!
  return { owners: r.owners, suspended: Number(r.suspended) }
}
