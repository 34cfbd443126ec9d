import { sql } from 'kysely'
import type { Db } from '../database/database.js'

/** What the instruments show about the queue and the ledger, read on a scrape (never per delivery). */
export interface QueueStats {
  /** Waiting deliveries whose time has come. */
  readonly due: number
  /** Endpoints with due work and no live lease (the claim's candidates). */
  readonly endpointsReady: number
  /** How long the longest-waiting ready endpoint has waited, in seconds (0 when none). */
  readonly oldestDueSeconds: number
  readonly endpoints: { readonly enabled: number; readonly failing: number; readonly disabled: number }
  readonly ledgerPosition: number
  /** The last position a signed checkpoint covers (0 before the first). */
  readonly sealedPosition: number
  /** How old the latest signed projection snapshot is, in seconds (null: none yet). */
  readonly snapshotAgeSeconds: number | null
  /** The position below which the latest signed snapshot folded everything (0: none yet). */
  readonly snapshotPosition: number
}

/**
 * One round trip. The oldest due and the ready endpoints come from the queue heads' index; the
 * due count walks the waiting rows' index (it follows the backlog, which is why it is cached).
 */
export async function queueStats(db: Db, now: Date): Promise<QueueStats> {
  const { rows } = await sql<{
    due: string; ready: string; oldest: Date | null; enabled: string; failing: string; disabled: string; position: string | null; sealed: string | null
    snapshot_at: Date | null; snapshot_position: string | null
  }>`
    select
      -- The state rows alone: the view's join to the origins would cost a probe per waiting row.
      (select count(*) from delivery_states where next_attempt_at is not null and state in ('pending', 'retryable') and next_attempt_at <= ${now}) as due,
      (select count(*) from endpoint_queue where ready_at <= ${now}) as ready,
      (select min(ready_at) from endpoint_queue where ready_at <= ${now}) as oldest,
      (select count(*) from endpoints where deleted_at is null and enabled and failing_since is null) as enabled,
      (select count(*) from endpoints where deleted_at is null and enabled and failing_since is not null) as failing,
      (select count(*) from endpoints where deleted_at is null and not enabled) as disabled,
      (select max(position) from ledger) as position,
      (select last_position from ledger_checkpoints order by seq desc limit 1) as sealed,
      s.created_at as snapshot_at, s.before_position as snapshot_position
    from (select null) _
    left join lateral (
      select ls.created_at, ls.before_position from ledger_checkpoints c
      join ledger_snapshots ls on ls.seq = (c.snapshot ->> 'seq')::bigint
      where c.snapshot is not null order by (c.snapshot ->> 'seq')::bigint desc limit 1
    ) s on true
  `.execute(db)
  const r = rows[0]!
  return {
    due: Number(r.due),
    endpointsReady: Number(r.ready),
    oldestDueSeconds: r.oldest ? Math.max(0, (now.getTime() - r.oldest.getTime()) / 1000) : 0,
    endpoints: { enabled: Number(r.enabled), failing: Number(r.failing), disabled: Number(r.disabled) },
    ledgerPosition: Number(r.position ?? 0),
    sealedPosition: Number(r.sealed ?? 0),
    snapshotAgeSeconds: r.snapshot_at ? Math.max(0, (now.getTime() - r.snapshot_at.getTime()) / 1000) : null,
    snapshotPosition: Number(r.snapshot_position ?? 0),
  }
}
