import { z } from 'zod'
import { deliveryLog, deliveryRedeliver, endpointGet, type RedeliverRefusal } from '@hookledger/store'
import { OpError, notFound } from './op-error.js'
import { defineOp, ok, type OpContext } from './operation.js'
import { cursorParam, deliverySchema, deliveryStateSchema, isoTimestamp, limitParam, pageOf, uuidParam } from './schemas.js'
import { paged } from './webhook-ops.js'
import { deliveryViews } from './waiting-view.js'

const ownerCtx = (ctx: OpContext) => ({ owner_id: ctx.principal.owner_id, now: ctx.deps.clock.now(), actor: ctx.actor })

export const deliveriesList = defineOp({
  name: 'deliveries.list',
  summary: "The owner's delivery log across endpoints, newest first; filter by endpoint, state, event type, time",
  scope: 'admin',
  http: { method: 'GET', path: '/api/admin/deliveries' },
  input: z
    .strictObject({
      endpoint_id: uuidParam.optional(),
      state: deliveryStateSchema.optional(),
      event_type: z.string().min(1).max(200).optional(),
      since: isoTimestamp.optional(),
      until: isoTimestamp.optional(),
      limit: limitParam,
      cursor: cursorParam,
    })
    .refine((i) => !i.since || !i.until || Date.parse(i.since) < Date.parse(i.until), {
      message: 'must be after since',
      path: ['until'],
    }),
  output: pageOf(deliverySchema),
  async handler(ctx, input) {
    const owner = ctx.principal.owner_id
    if (input.endpoint_id !== undefined && !(await endpointGet(ctx.deps.db, owner, input.endpoint_id)))
      throw notFound('endpoint')
    const page = await paged(() =>
      deliveryLog(ctx.deps.db, owner, {
        ...input,
        since: input.since !== undefined ? new Date(input.since) : undefined,
        until: input.until !== undefined ? new Date(input.until) : undefined,
      }),
    )
    return ok({ data: await deliveryViews(ctx, page.data), next_cursor: page.next_cursor })
  },
})

const REFUSALS: Record<Exclude<RedeliverRefusal, 'not_found'>, string> = {
  delivery_in_progress: 'the delivery is still waiting or running; only a completed or discarded delivery is sent again',
  delivery_retired: 'the delivery was retired (past the delivery retention); its history is kept, but it cannot be sent again',
  endpoint_disabled: 'the endpoint is disabled; switch it on with enabled: true first',
  event_pruned: 'the event was pruned (past the event retention); there is nothing left to send',
}

export const deliveriesRedeliver = defineOp({
  name: 'deliveries.redeliver',
  summary: 'Send one completed or discarded delivery again: a new run with a fresh attempt budget, due now',
  scope: 'admin',
  http: { method: 'POST', path: '/api/admin/deliveries/:id/redeliver' },
  input: z.strictObject({ id: uuidParam }),
  output: deliverySchema,
  async handler(ctx, input) {
    const res = await ctx.deps.db.transaction().execute((trx) => deliveryRedeliver(trx, ownerCtx(ctx), input.id))
    if ('refused' in res) {
      if (res.refused === 'not_found') throw notFound('delivery')
      throw new OpError(res.refused, REFUSALS[res.refused])
    }
    return ok((await deliveryViews(ctx, [res.delivery]))[0]!)
  },
})
