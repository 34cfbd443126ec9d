import { randomUUID } from 'node:crypto'
import { z } from 'zod'
import type { Clock, EventCatalog } from '@hookledger/core'
import { eventInsert, type Trx } from '@hookledger/store'
import { OpError } from './op-error.js'
import { assertStorable, zodInputError } from './op-input.js'
import { eventId, isoTimestamp } from './schemas.js'

/** `data` is identifiers and flags only; larger than this encoded is refused with 413. */
export const EVENT_DATA_MAX_BYTES = 16 * 1024

/** What a publisher sends. `id` and `occurred_at` default to a fresh id and now. */
export const publishInputSchema = z.strictObject({
  id: eventId.optional(),
  type: z.string().min(1).max(200),
  subject: z.string().min(1).max(2048),
  occurred_at: isoTimestamp.optional(),
  data: z.record(z.string(), z.unknown()).default({}),
})
export type PublishInput = z.input<typeof publishInputSchema>

/** Checks an event against the catalog and the size limit; returns it ready to store. */
export function preparePublish(
  catalog: EventCatalog,
  input: z.output<typeof publishInputSchema>,
  now: Date,
) {
  if (!catalog.isKnown(input.type)) {
    throw new OpError(
      422,
      'unknown_event_type',
      `event type "${input.type}" is not declared in the catalog`,
      'type',
    )
  }
  if (catalog.isReserved(input.type)) {
    throw new OpError(422, 'reserved_event_type', `event type "${input.type}" is published by hookledger itself, not by applications`, 'type')
  }
  const bytes = Buffer.byteLength(JSON.stringify(input.data), 'utf8')
  if (bytes > EVENT_DATA_MAX_BYTES) {
    throw new OpError(
      413,
      'payload_too_large',
      `data is ${bytes} bytes encoded; the limit is ${EVENT_DATA_MAX_BYTES}`,
      'data',
    )
  }
  return {
    id: input.id ?? `evt_${randomUUID().replaceAll('-', '')}`,
    type: input.type,
    subject: input.subject,
    occurred_at: input.occurred_at ? new Date(input.occurred_at) : now,
    data: input.data,
  }
}

/**
 * The library call for an application that shares hookledger's database: `publish(trx, event)`
 * stores the event inside the caller's own Kysely transaction (a transactional outbox), so the
 * event exists exactly when the caller's change commits.
 *
 * ### Example
 * ```ts
 * const publish = createPublisher({ clock, catalog, owner_id: 'default' })
 * await db.transaction().execute(async (trx) => {
 *   await saveBooking(trx, booking)
 *   await publish(trx, { type: 'booking.created', subject: `booking://${booking.id}` })
 * })
 * ```
 */
export function createPublisher(options: {
  clock: Clock
  catalog: EventCatalog
  owner_id: string
  actor?: string
}) {
  return async function publish(
    trx: Trx,
    event: PublishInput,
  ): Promise<{ id: string; created: boolean }> {
    assertStorable(event)
    const parsed = publishInputSchema.safeParse(event)
    if (!parsed.success) throw zodInputError(parsed.error)
    const now = options.clock.now()
    const prepared = preparePublish(options.catalog, parsed.data, now)
    return eventInsert(trx, {
      owner_id: options.owner_id,
      event: prepared,
      now,
      actor: options.actor ?? 'system',
    })
  }
}
