import { sql } from 'kysely'
import { iso, type DeliveryRow, type EndpointRow } from '@hookledger/core'
import type { Trx } from '../database/database.js'
import { limitTransactionIdle } from '../database/transaction-idle-limit.js'
import type { CommandContext } from '../endpoint-commands.js'
import { ledgerWrite } from '../ledger-write.js'

/** Why one delivery cannot be sent again. */
export type RedeliverRefusal =
  | 'not_found'
  | 'delivery_in_progress'
  | 'delivery_retired'
  | 'endpoint_disabled'
  | 'event_pruned'

/**
 * `deliveries.redeliver`: one completed or discarded delivery gets a new run (run + 1, a fresh
 * attempt budget, due now), through the write primitive, so the endpoint's queue head follows.
 * The `delivery.redelivered` entry names the previous run and its attempts (the lineage) and
 * the actor. Lock order is the claim's: the delivery, then its endpoint.
 */
export async function deliveryRedeliver(
  trx: Trx,
  ctx: CommandContext,
  id: string,
): Promise<{ delivery: DeliveryRow } | { refused: RedeliverRefusal }> {
  // It locks the delivery and its endpoint: the delivery cycle's idle limit (transaction-idle-limit.ts).
  await limitTransactionIdle(trx)
  const delivery = (
    await sql<DeliveryRow>`
      select * from deliveries where id = ${id}::uuid and owner_id = ${ctx.owner_id} for update
    `.execute(trx)
  ).rows[0]
  if (!delivery) {
    // Retired (its entries are still in the ledger) or never ours.
    const inLedger = await trx
      .selectFrom('ledger')
      .select('delivery_id')
      .where('delivery_id', '=', id)
      .where('owner_id', '=', ctx.owner_id)
      .limit(1)
      .executeTakeFirst()
    return { refused: inLedger ? 'delivery_retired' : 'not_found' }
  }
  const endpoint = (
    await sql<EndpointRow>`
      select * from endpoints where id = ${delivery.endpoint_id}::uuid and deleted_at is null for update
    `.execute(trx)
  ).rows[0]
  if (!endpoint) return { refused: 'not_found' }
  if (delivery.state !== 'completed' && delivery.state !== 'discarded') return { refused: 'delivery_in_progress' }
  if (!endpoint.enabled) return { refused: 'endpoint_disabled' }
  const event = await trx.selectFrom('events').select('id').where('owner_id', '=', ctx.owner_id).where('id', '=', delivery.event_id).executeTakeFirst()
  if (!event) return { refused: 'event_pruned' }
  const { deliveries } = await ledgerWrite(trx, {
    base: { deliveries: [delivery] },
    entries: [
      {
        kind: 'delivery.redelivered',
        occurred_at: ctx.now,
        owner_id: ctx.owner_id,
        endpoint_id: delivery.endpoint_id,
        delivery_id: delivery.id,
        event_id: delivery.event_id,
        actor: ctx.actor,
        payload: {
          run: delivery.run + 1,
          next_attempt_at: iso(ctx.now),
          previous_run: delivery.run,
          previous_attempts: delivery.attempts,
        },
      },
    ],
    notify: { channel: 'deliveries' },
  })
  return { delivery: deliveries.get(delivery.id)! }
}
