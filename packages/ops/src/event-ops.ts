/**
 * The event operations: publish (the HTTP face of `@hookledger/publisher`) and the catalog of
 * types an endpoint can subscribe to.
 */
import { z } from 'zod'
import { dbSchemaOf, eventCatalogRead } from '@hookledger/store'
import { defineOp, ok } from './operation.js'
import { eventPublish, eventPublishAdmit, eventPublishRefusedAlready, publishInputSchema, publishRefusalsOf } from './event-publisher.js'
import { pageOf } from './schemas.js'

export const eventsPublish = defineOp({
  name: 'events.publish',
  summary: 'Publish a thin event; the same id again with the same content stores nothing, with different content is refused (409)',
  scope: 'publish',
  http: { method: 'POST', path: '/api/events' },
  statuses: [200, 202],
  input: publishInputSchema,
  output: z.object({
    id: z.string(),
    /** Present when accepted with a warning (the type is deprecated); also in the `Deprecation` header. */
    warning: z.string().optional(),
  }),
  async handler(ctx, input) {
    // Refused a moment ago and still over: answered from memory. Else the owner's limit in a
    // statement of its own, then the publish's transaction, on one connection.
    const refusals = publishRefusalsOf(ctx.deps.db)
    eventPublishRefusedAlready(refusals, ctx.principal.owner_id, ctx.deps.clock.now())
    const { id, created, warning, deprecated } = await ctx.deps.db.connection().execute(async (conn) => {
      await eventPublishAdmit(conn, refusals, ctx.principal.owner_id, ctx.deps.clock.now())
      return conn.transaction().execute((trx) =>
        eventPublish(trx, {
          catalog: ctx.deps.catalog,
          schema: dbSchemaOf(ctx.deps.db),
          owner_id: ctx.principal.owner_id,
          actor: ctx.actor,
          now: ctx.deps.clock.now(),
          event: input,
        }),
      )
    })
    if (!warning || !deprecated) return { status: created ? 202 : 200, body: { id } }
    ctx.deps.logger.warn({ event_id: id, type: input.type, actor: ctx.actor }, 'publish:deprecated_type')
    // RFC 9745 (Deprecation) and RFC 8594 (Sunset): machine-readable, beside the sentence.
    const headers: Record<string, string> = { deprecation: `@${Math.floor(Date.parse(deprecated.at) / 1000)}` }
    if (deprecated.sunset_at) headers['sunset'] = new Date(deprecated.sunset_at).toUTCString()
    return { status: created ? 202 : 200, body: { id, warning }, headers }
  },
})

export const eventTypeSchema = z.object({
  type: z.string(),
  group: z.string(),
  description: z.string(),
  /** The JSON Schema (2020-12) its `data` matches, when the installation declared one. */
  schema: z.record(z.string(), z.unknown()).nullable().optional(),
  /** Deprecated: still delivered to existing subscriptions, not subscribable anew. */
  deprecated: z.object({ at: z.string(), reason: z.string(), sunset_at: z.string().nullable() }).nullable().optional(),
})

export const webhooksEventTypes = defineOp({
  name: 'webhooks.event_types',
  summary: 'The event types an endpoint can subscribe to (exposure webhook): built in and declared by the installation',
  scope: 'admin',
  http: { method: 'GET', path: '/api/admin/webhooks/event_types' },
  input: z.strictObject({}),
  output: pageOf(eventTypeSchema),
  async handler(ctx) {
    const catalog = await eventCatalogRead(ctx.deps.db, ctx.deps.catalog)
    const data = catalog
      .webhookTypes()
      .map(({ type, group, description, schema, deprecated }) => ({
        type, group, description, schema: schema ? { ...schema } : null, deprecated: deprecated ? { ...deprecated } : null,
      }))
    // The whole catalog fits one page; the list shape is kept for uniformity.
    return ok({ data, next_cursor: null })
  },
})
