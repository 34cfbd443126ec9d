import type { EventCatalog } from '@hookledger/core'
import { createPublisher, PublishError, type Publisher, type PublishOutcome, type PublishTransaction } from '@hookledger/publisher'
import { OpError } from './op-error.js'

// The rules and the input schema are core's (event-rules.ts), shared with @hookledger/publisher.
export { EVENT_DATA_MAX_BYTES, publishInputSchema, type PublishInput } from '@hookledger/core'

const publishers = new WeakMap<EventCatalog, Map<string, Publisher>>()

/**
 * `POST /api/events` stores through the same publisher an application calls in its own
 * transaction, so both refuse, de-duplicate and answer a conflicting re-publication alike.
 * The catalog is the database's (the publisher reads the declared types in `trx`), laid over
 * `catalog`, the built-ins.
 * @throws OpError the publisher's refusal (400, 409, 413, 422)
 */
export async function eventPublish(
  trx: PublishTransaction,
  params: { catalog: EventCatalog; schema: string; owner_id: string; actor: string; now: Date; event: Record<string, unknown> },
): Promise<PublishOutcome> {
  let bySchema = publishers.get(params.catalog)
  if (!bySchema) publishers.set(params.catalog, (bySchema = new Map()))
  let publisher = bySchema.get(params.schema)
  if (!publisher) bySchema.set(params.schema, (publisher = createPublisher({ catalog: params.catalog, schema: params.schema })))
  try {
    const [outcome] = await publisher.publishEvents(
      trx,
      [{ ...(params.event as { type: string; subject: string }), owner_id: params.owner_id }],
      { now: params.now, actor: params.actor },
    )
    return outcome!
  } catch (err) {
    if (err instanceof PublishError) throw new OpError(err.code, err.message, err.field, err.pointer, err.retryAt)
    throw err
  }
}
