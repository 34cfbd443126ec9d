import { sql, type RawBuilder } from 'kysely'
import type { DeliveryRow } from '@hookledger/core'
import { DELIVERY_ROW_COLUMNS } from './delivery-row-sql.js'
import { HEAD_EVENT_COLUMNS, deliveryWithEvent, type FollowingDelivery } from './delivery-claim.js'

/**
 * For the one-call settle (`ledgerWrite`'s `alongside`): each claimed delivery's endpoint's
 * next due delivery after it, with its event, read on the snapshot before the write — the
 * settled delivery is still `running` there and the claimed one is excluded by id. Unlocked:
 * the claim that takes it checks its version.
 */
export function followingAlongside(claimed: readonly Pick<DeliveryRow, 'id' | 'endpoint_id'>[], now: Date): RawBuilder<unknown> {
  return sql`
    select ${DELIVERY_ROW_COLUMNS}, ${HEAD_EVENT_COLUMNS}
    from unnest(${claimed.map((d) => d.endpoint_id)}::uuid[], ${claimed.map((d) => d.id)}::uuid[]) as c(endpoint_id, id)
    cross join lateral (
      select d.id from delivery_states d
      where d.endpoint_id = c.endpoint_id and d.state in ('pending', 'retryable') and d.next_attempt_at <= ${now} and d.id <> c.id
      order by d.next_attempt_at, d.id limit 1
    ) h
    join delivery_states s on s.id = h.id
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
