import { sql, type RawBuilder } from 'kysely'
import type { DeliveryRow } from '@hookledger/core'
import { DELIVERY_ROW_COLUMNS } from './delivery-row-sql.js'
import { HEAD_EVENT_COLUMNS, deliveryWithEvent, type FollowingDelivery } from './delivery-heads.js'
import { nextOfEndpoint } from './delivery-next.js'

/**
 * For the one-call settle (`ledgerWrite`'s `alongside`): each claimed delivery's endpoint's
 * next delivery after it on its line (delivery-next.ts), with its event, read on the snapshot
 * before the write — the settled deliveries (`settled`) are still `running` there and are left
 * off the line, as is the claimed one. Only a waiting, due one is read. Unlocked: the claim that
 * takes it checks its version.
 */
export function followingAlongside(
  claimed: readonly Pick<DeliveryRow, 'id' | 'endpoint_id'>[],
  now: Date,
  settled: readonly string[] = [],
  /** Whether any of their endpoints was read as `ordering: strict` (nextOfEndpoint's `strict`). */
  strict = true,
): RawBuilder<unknown> {
  return sql`
    select ${DELIVERY_ROW_COLUMNS}, ${HEAD_EVENT_COLUMNS}
    from unnest(${claimed.map((d) => d.endpoint_id)}::uuid[], ${claimed.map((d) => d.id)}::uuid[]) as c(endpoint_id, id)
    cross join lateral (${nextOfEndpoint(sql`c.endpoint_id`, now, 1, sql`${[...settled]}::uuid[] || c.id`, { strict })}) h
    -- By primary key under each line's head, whatever the planner's estimate of the backlog: as a
    -- plain join, a generic plan made when the queue was empty scanned the due deliveries once
    -- per claimed endpoint (statements of 2.5 s at a backlog of tens of thousands: a stall that fed itself).
    cross join lateral (
      select * from delivery_states s
      where s.id = h.id and s.state in ('pending', 'retryable') and s.next_attempt_at <= ${now}
      limit 1
    ) s
    join delivery_origins o on o.id = s.id
    join events ev on ev.owner_id = o.owner_id and ev.id = o.event_id
  `
}

/** The rows `followingAlongside` read, by endpoint id (its inner join on events: none is pruned). */
export function followingFromRows(rows: readonly Record<string, unknown>[]): Map<string, FollowingDelivery> {
  const out = new Map<string, FollowingDelivery>()
  for (const row of rows) {
    const { delivery, event } = deliveryWithEvent(row as unknown as Parameters<typeof deliveryWithEvent>[0])
    out.set(delivery.endpoint_id, { delivery, event: event! })
  }
  return out
}
