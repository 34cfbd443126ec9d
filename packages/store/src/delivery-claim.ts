import { sql } from 'kysely'
import {
  DeliveryOutcome,
  JOB_TIMEOUT_MS,
  decideDelivery,
  iso,
  type DeliveryRow,
  type EndpointRow,
  type LedgerEntry,
} from '@hookledger/core'
import type { Db } from './database.js'
import { ledgerWrite } from './ledger-write.js'

/** The event as it travels: thin, no content. */
export interface ThinEvent {
  readonly id: string
  readonly type: string
  readonly subject: string
  readonly occurred_at: Date
  readonly data: Record<string, unknown>
}

/** The event columns the claim reads beside each head (null when the event was pruned). */
interface HeadEvent {
  readonly ev_id: string | null
  readonly ev_type: string | null
  readonly ev_subject: string | null
  readonly ev_occurred_at: Date | null
  readonly ev_data: Record<string, unknown> | null
}

/** A delivery this worker now holds, with everything needed to sign and send it. */
export interface ClaimedDelivery {
  readonly delivery: DeliveryRow
  readonly endpoint: EndpointRow
  readonly event: ThinEvent
}

export interface DeliveryClaimParams {
  readonly now: Date
  /** Free slots: never claim more than this. */
  readonly limit: number
  /** `worker:<id>`. */
  readonly actor: string
  readonly leaseMs?: number
}

export interface DeliveryClaimResult {
  readonly claimed: ClaimedDelivery[]
  /** Deliveries settled at claim time (endpoint disabled/deleted, event pruned, lease busy). */
  readonly settled: number
}

/**
 * Claims up to `limit` due deliveries, at most one per endpoint, and takes each endpoint's lease
 * (`busy_until`) in the same transaction — committed before any POST. Deliveries whose endpoint
 * is disabled or deleted, or whose event was pruned, are discarded here; one whose endpoint
 * lease another worker took in the meantime is snoozed 2 s without spending an attempt.
 *
 * The candidate query probes each leasable endpoint for its earliest waiting delivery, so its
 * cost follows the number of endpoints, never the backlog or the history. Disabled and deleted
 * endpoints are always candidates, whatever their lease: their due deliveries (e.g. one whose
 * in-flight attempt was settled as a retry after the delete) must be discarded, not stranded.
 */
export async function deliveryClaim(db: Db, params: DeliveryClaimParams): Promise<DeliveryClaimResult> {
  const { now, limit, actor } = params
  if (limit <= 0) return { claimed: [], settled: 0 }
  const leaseUntil = new Date(now.getTime() + (params.leaseMs ?? JOB_TIMEOUT_MS))
  return db.transaction().execute(async (trx) => {
    // One statement: pick the heads, lock them (a row another worker holds, or that changed
    // since, is skipped), and read their events. Each head is locked by primary key (a lateral
    // probe per head), whatever the planner's estimate of the backlog: left to itself after a
    // burst of new rows it would rather scan the whole claim index.
    const locked = await sql<DeliveryRow & HeadEvent>`
      with heads as materialized (
        select h.id from endpoints e
        cross join lateral (
          select d.id, d.next_attempt_at from deliveries d
          where d.endpoint_id = e.id and d.state in ('pending', 'retryable') and d.next_attempt_at <= ${now}
          order by d.next_attempt_at, d.id limit 1
        ) h
        where (e.busy_until is null or e.busy_until <= ${now} or not e.enabled or e.deleted_at is not null)
        order by h.next_attempt_at, h.id
        limit ${limit}
      )
      select d.*, ev.id as ev_id, ev.type as ev_type, ev.subject as ev_subject,
             ev.occurred_at as ev_occurred_at, ev.data as ev_data
      from heads
      cross join lateral (
        select * from deliveries d
        where d.id = heads.id and d.state in ('pending', 'retryable') and d.next_attempt_at <= ${now}
        limit 1
      ) d
      left join events ev on ev.owner_id = d.owner_id and ev.id = d.event_id
      order by d.next_attempt_at, d.id
      for update of d skip locked
    `.execute(trx)
    if (locked.rows.length === 0) return { claimed: [], settled: 0 }
    const deliveries: DeliveryRow[] = []
    const eventByKey = new Map<string, ThinEvent>()
    for (const row of locked.rows) {
      const { ev_id, ev_type, ev_subject, ev_occurred_at, ev_data, ...delivery } = row
      deliveries.push(delivery)
      if (ev_id !== null) {
        eventByKey.set(`${delivery.owner_id}\u0000${ev_id}`, {
          id: ev_id,
          type: ev_type!,
          subject: ev_subject!,
          occurred_at: ev_occurred_at!,
          data: ev_data!,
        })
      }
    }
    const endpointIds = [...new Set(deliveries.map((d) => d.endpoint_id))].sort()
    // Lock the endpoints in a fixed order; the lease is decided on their latest state.
    const endpoints = (
      await sql<EndpointRow>`select * from endpoints where id = any(${endpointIds}::uuid[]) order by id for update`.execute(trx)
    ).rows
    const endpointById = new Map(endpoints.map((e) => [e.id, e]))

    const entries: LedgerEntry[] = []
    const claimedIds: string[] = []
    const leasedNow = new Set<string>()
    const ctx = { now, actor }
    for (const d of deliveries) {
      const endpoint = endpointById.get(d.endpoint_id)!
      const event = eventByKey.get(`${d.owner_id}\u0000${d.event_id}`)
      const busy =
        leasedNow.has(endpoint.id) ||
        (endpoint.busy_until !== null && endpoint.busy_until.getTime() > now.getTime())
      if (endpoint.deleted_at !== null) {
        entries.push(...decideDelivery(d, DeliveryOutcome.discarded('endpoint_deleted'), ctx))
      } else if (!endpoint.enabled) {
        const detail = endpoint.disabled_reason ?? ''
        entries.push(...decideDelivery(d, DeliveryOutcome.discarded('endpoint_disabled', null, { detail }), ctx))
      } else if (!event) {
        entries.push(...decideDelivery(d, DeliveryOutcome.discarded('event_pruned'), ctx))
      } else if (busy) {
        entries.push(...decideDelivery(d, DeliveryOutcome.snoozedForBusy(), ctx))
      } else {
        leasedNow.add(endpoint.id)
        claimedIds.push(d.id)
        entries.push({
          kind: 'delivery.claimed',
          occurred_at: now,
          owner_id: d.owner_id,
          endpoint_id: d.endpoint_id,
          delivery_id: d.id,
          event_id: d.event_id,
          actor,
          payload: { worker: actor, lease_until: iso(leaseUntil) },
        })
      }
    }
    const written = await ledgerWrite(trx, { base: { endpoints, deliveries }, entries })
    const claimed = claimedIds.map((id) => {
      const delivery = written.deliveries.get(id)!
      return {
        delivery,
        endpoint: written.endpoints.get(delivery.endpoint_id)!,
        event: eventByKey.get(`${delivery.owner_id}\u0000${delivery.event_id}`)!,
      }
    })
    return { claimed, settled: deliveries.length - claimed.length }
  })
}
