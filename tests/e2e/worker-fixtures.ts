import { createSecretBox, generateWebhookSecret, secretKeyId } from '@hookledger/core'
import { endpointCreate, eventInsert } from '@hookledger/store'
import type { TestDatabase } from '@hookledger/testkit'

/** An endpoint for `receiverUrl`, sealed under `key` (the workers' master key). */
export async function createEndpoint(db: TestDatabase['db'], key: Uint8Array, receiverUrl: string, eventTypes = ['*']) {
  const secret = generateWebhookSecret()
  return db.transaction().execute((trx) =>
    endpointCreate(
      trx,
      { owner_id: 'default', now: new Date(), actor: 'owner:test' },
      {
        url: receiverUrl,
        description: '',
        event_types: eventTypes,
        embed_id: null,
        secret_sealed: createSecretBox(key).seal(secret),
        secret_key_id: secretKeyId(secret),
      },
    ),
  )
}

/** Publishes one event now, as the application would. */
export async function publish(db: TestDatabase['db'], id: string, type = 'booking.created') {
  await db.transaction().execute((trx) =>
    eventInsert(trx, {
      owner_id: 'default',
      event: { id, type, subject: `booking://${id}`, occurred_at: new Date(), data: {} },
      now: new Date(),
      actor: 'system',
    }),
  )
}

