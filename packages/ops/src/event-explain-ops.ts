import { z } from 'zod'
import { explainVerdict } from '@hookledger/core'
import { eventExplainFacts } from '@hookledger/store'
import { notFound } from './op-error.js'
import { defineOp, ok } from './operation.js'
import { eventId } from './schemas.js'

const verdictSchema = z.object({
  endpoint_id: z.string(),
  url: z.string(),
  /** The endpoint now: deleted ones are listed until purged. */
  deleted: z.boolean(),
  verdict: z.enum([
    'pending', 'running', 'retryable', 'completed', 'discarded',
    'not_subscribed', 'scope_denied', 'endpoint_disabled', 'endpoint_deleted', 'created_after_event',
    'not_fanned_out_yet', 'internal_event', 'matched', 'not_addressed',
  ]),
  delivery_id: z.string().optional(),
  retired: z.boolean().optional(),
  event_types: z.array(z.string()).optional(),
  reason: z.string().nullable().optional(),
})

export const eventsExplain = defineOp({
  name: 'events.explain',
  summary: 'For every endpoint of the owner: what happened to this event and why, from the ledger',
  scope: 'admin',
  http: { method: 'GET', path: '/api/admin/events/:id/explain' },
  input: z.strictObject({ id: eventId }),
  output: z.object({
    event: z.object({ id: z.string(), type: z.string(), published_at: z.string() }),
    /** When the fan-out decided; null while it has not yet. */
    decided_at: z.string().nullable(),
    /**
     * The type's exposure when the fan-out decided (null: not yet): `internal` means no endpoint
     * got it, whatever its subscription (each says `internal_event`, with the reason).
     */
    exposure: z.enum(['webhook', 'internal']).nullable(),
    data: z.array(verdictSchema),
  }),
  async handler(ctx, input) {
    const facts = await eventExplainFacts(ctx.deps.db, ctx.principal.owner_id, input.id)
    if (!facts.event) throw notFound('event')
    return ok({
      event: { ...facts.event, published_at: facts.event.published_at.toISOString() },
      decided_at: facts.decision ? facts.decision.decided_at.toISOString() : null,
      exposure: facts.decision ? (facts.decision.skipped_internal ? ('internal' as const) : ('webhook' as const)) : null,
      data: facts.endpoints.map((e) => ({
        endpoint_id: e.endpoint.id,
        url: e.endpoint.url,
        deleted: e.endpoint.deleted_at !== null,
        ...explainVerdict(facts.decision, { id: e.endpoint.id, at_decision: e.at_decision, delivery: e.delivery, delivery_id: e.delivery_id }),
      })),
    })
  },
})
