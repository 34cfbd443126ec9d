/**
 * The event operations: publish (the HTTP face of `@hookledger/publisher`) and the catalog of
 * types an endpoint can subscribe to.
 */
import { z } from 'zod'
import { dbSchemaOf } from '@hookledger/store'
import { defineOp, ok } from './operation.js'
import { eventPublish, publishInputSchema } from './event-publisher.js'
import { pageOf } from './schemas.js'

export const eventsPublish = defineOp({
  name: 'events.publish',
  summary: 'Publish a thin event; the same id again with the same content stores nothing, with different content is refused (409)',
  scope: 'publish',
  http: { method: 'POST', path: '/api/events' },
  statuses: [200, 202],
  input: publishInputSchema,
  output: z.object({ id: z.string() }),
  async handler(ctx, input) {
    const { id, created } = await ctx.deps.db.transaction().execute((trx) =>
      eventPublish(trx, {
        catalog: ctx.deps.catalog,
        schema: dbSchemaOf(ctx.deps.db),
        owner_id: ctx.principal.owner_id,
        actor: ctx.actor,
        now: ctx.deps.clock.now(),
        event: input,
      }),
    )
    return { status: created ? 202 : 200, body: { id } }
  },
})

export const eventTypeSchema = z.object({
  type: z.string(),
  group: z.string(),
  description: z.string(),
})

export const webhooksEventTypes = defineOp({
  name: 'webhooks.event_types',
  summary: 'The event types an endpoint can subscribe to (exposure webhook)',
  scope: 'admin',
  http: { method: 'GET', path: '/api/admin/webhooks/event_types' },
  input: z.strictObject({}),
  output: pageOf(eventTypeSchema),
  async handler(ctx) {
    const data = ctx.deps.catalog
      .webhookTypes()
      .map(({ type, group, description }) => ({ type, group, description }))
    // The whole catalog fits one page; the list shape is kept for uniformity.
    return ok({ data, next_cursor: null })
  },
})
