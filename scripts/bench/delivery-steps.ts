/**
 * Where a delivery's time goes, from the ledger's own timestamps, per delivery of the events
 * named: publish → fan-out (`published_at` → the fan-out's `now`, its decision's time), fan-out → claim (the claim's
 * `now`), claim → send (the attempt's `started_at`), each as p50 and p99 in ms. A `now` is taken
 * when its transaction starts, so a step includes the transaction before it and the wake-up.
 */
import { sql } from 'kysely'
import type { Db } from '@hookledger/store'
import { percentile, round } from './util.js'

export interface DeliverySteps {
  readonly p50_ms: { fanout: number; claim: number; send: number }
  readonly p99_ms: { fanout: number; claim: number; send: number }
}

export async function deliverySteps(db: Db, owner: string | null, eventIds: readonly string[]): Promise<DeliverySteps> {
  const rows = (
    await sql<{ fanout_ms: number; claim_ms: number; send_ms: number }>`
      select extract(epoch from q.occurred_at - ev.published_at) * 1000 as fanout_ms,
             extract(epoch from c.occurred_at - q.occurred_at) * 1000 as claim_ms,
             extract(epoch from (a.payload ->> 'started_at')::timestamptz - c.occurred_at) * 1000 as send_ms
      from events ev
      -- Each delivery's enqueue: its event's fan-out decision (ledger format 3), one per endpoint it matched.
      join ledger q on q.event_id = ev.id and q.owner_id = ev.owner_id and q.kind = 'fanout.decided'
      cross join lateral (select hookledger_delivery_id(m.id::uuid, ev.id) as delivery_id from jsonb_array_elements_text(q.payload -> 'matched') m(id)) d
      join lateral (select l.occurred_at from ledger l where l.delivery_id = d.delivery_id and l.kind = 'delivery.claimed' order by l.position limit 1) c on true
      join lateral (select l.payload from ledger l where l.delivery_id = d.delivery_id and l.kind = 'delivery.attempted' order by l.position limit 1) a on true
      where ev.id = any(${[...eventIds]}::text[]) and (${owner}::text is null or ev.owner_id = ${owner})
    `.execute(db)
  ).rows
  const at = (key: 'fanout_ms' | 'claim_ms' | 'send_ms', p: number) => round(percentile(rows.map((r) => Number(r[key])).sort((a, b) => a - b), p))
  return {
    p50_ms: { fanout: at('fanout_ms', 50), claim: at('claim_ms', 50), send: at('send_ms', 50) },
    p99_ms: { fanout: at('fanout_ms', 99), claim: at('claim_ms', 99), send: at('send_ms', 99) },
  }
}
