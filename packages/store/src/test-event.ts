import { sql } from 'kysely'
import { COOL_DOWN_MS, deliveryIdFor, iso, type EndpointRow, type LedgerEntry } from '@hookledger/core'
import type { Trx } from './database.js'
import type { CommandContext } from './endpoint-commands.js'
import { DELIVERIES_CHANNEL, eventInsert, type EventToPublish } from './event-publish.js'
import { ledgerWrite } from './ledger-write.js'

/**
 * `webhooks.send_test`: stores the `webhook.test` event and fans it out to the one endpoint it
 * names, all in the caller's transaction, so the delivery id can be answered at once. The
 * ledger reads as if the fan-out loop had done it — `event.published`, `fanout.decided`,
 * `delivery.enqueued` — and the event is marked fanned out so the loop never sees it. The
 * caller holds the endpoint's row lock (it must be live and enabled).
 */
export async function testEventSend(
  trx: Trx,
  ctx: CommandContext,
  endpoint: EndpointRow,
  event: EventToPublish,
): Promise<{ event_id: string; delivery_id: string }> {
  await eventInsert(trx, { owner_id: ctx.owner_id, event, now: ctx.now, actor: ctx.actor })
  const delivery_id = deliveryIdFor(endpoint.id, event.id)
  // Same cool-down as any new delivery: a failing receiver is not hit at once.
  const coolDown = endpoint.failing_since !== null
  const base = {
    occurred_at: ctx.now,
    owner_id: ctx.owner_id,
    event_id: event.id,
    actor: ctx.actor,
  }
  const entries: LedgerEntry[] = [
    {
      ...base,
      kind: 'fanout.decided',
      endpoint_id: null,
      delivery_id: null,
      payload: { type: event.type, matched: [endpoint.id], denied: [] },
    },
    {
      ...base,
      kind: 'delivery.enqueued',
      endpoint_id: endpoint.id,
      delivery_id,
      payload: {
        event_type: event.type,
        next_attempt_at: iso(coolDown ? new Date(ctx.now.getTime() + COOL_DOWN_MS) : ctx.now),
        cool_down: coolDown,
      },
    },
  ]
  await ledgerWrite(trx, {
    entries,
    alongside: [
      sql`update events set fanned_out_at = ${ctx.now} where owner_id = ${ctx.owner_id} and id = ${event.id}`,
    ],
    notify: { channel: DELIVERIES_CHANNEL },
  })
  return { event_id: event.id, delivery_id }
}
