import { sql, type RawBuilder } from 'kysely'
import type { DeliveryRow } from '@hookledger/core'
import { DELIVERY_ROW_COLUMNS } from './delivery-row-sql.js'
import type { FollowingDelivery } from './delivery-claim.js'

/**
 * For the one-call settle (`ledgerWrite`'s `alongside`): each claimed delivery's endpoint's
 * next due delivery after it, with its event, read on the snapshot before the write — the
 * settled delivery is still `running` there and the claimed one is excluded by id. Unlocked:
 * the claim that takes it checks its version.
 */
export function followingAlongside(claimed: readonly Pick<DeliveryRow, 'id' | 'endpoint_id'>[], now: Date): RawBuilder<unknown> {
  return sql`
    select ${DELIVERY_ROW_COLUMNS}, ev.id as ev_id, ev.type as ev_type, ev.subject as ev_subject,
           ev.occurred_at as ev_occurred_at, ev.data as ev_data
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

/** The rows `followingAlongside` read, by endpoint id. */
export function followingFromRows(rows: readonly Record<string, unknown>[]): Map<string, FollowingDelivery> {
  const out = new Map<string, FollowingDelivery>()
  for (const r of rows) {
    const { ev_id, ev_type, ev_subject, ev_occurred_at, ev_data, ...delivery } = r as unknown as DeliveryRow & {
      ev_id: string
      ev_type: string
      ev_subject: string
      ev_occurred_at: Date
      ev_data: Record<string, unknown>
    }
    out.set(delivery.endpoint_id, { delivery, event: { id: ev_id, type: ev_type, subject: ev_subject, occurred_at: ev_occurred_at, data: ev_data } })
  }
  return out
}
