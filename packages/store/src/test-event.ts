import { sql } from 'kysely'
import { deliveryIdFor, fanoutEntries, type EndpointRow } from '@hookledger/core'
import type { Trx } from './database/database.js'
import type { CommandContext } from './endpoint-commands.js'
import { eventInsert, type EventToPublish } from './event-publish.js'
import { ledgerWrite } from './ledger-write.js'

/**
 * `webhooks.send_test`: stores the `webhook.test` event and fans it out to the one endpoint it
 * names, all in the caller's transaction, so the delivery id can be answered at once. The
 * ledger reads as if the fan-out loop had done it — `event.published`, then `fanout.decided`
 * (which enqueues its delivery) — and the event is marked fanned out so the loop never sees it. The
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
  const entries = fanoutEntries(
    { event: { owner_id: ctx.owner_id, id: event.id, type: event.type }, matched: [endpoint], denied: [], visible: true },
    { now: ctx.now, actor: ctx.actor },
  )
  await ledgerWrite(trx, {
    entries,
    fannedOut: { events: [{ owner_id: ctx.owner_id, id: event.id }], at: ctx.now },
    notify: { channel: 'deliveries' },
  })
  return { event_id: event.id, delivery_id }
}
