/**
 * The installation's event catalog, operator scope: declare a type, change it, deprecate it,
 * list every type (built in and declared). Each change is a ledger entry (store/event-types.ts);
 * the service and `@hookledger/publisher` read the same rows, so what one accepts the other does.
 */
import { z } from 'zod'
import {
  eventTypeDeclareInputSchema,
  eventTypeDeprecateInputSchema,
  eventTypeUpdateInputSchema,
  type CatalogRefusal,
  type EventCatalog,
  type EventTypeDeclaration,
} from '@hookledger/core'
import { eventCatalogRead, eventTypeDeclare, eventTypeDeprecate, eventTypeUpdate, type CatalogChange } from '@hookledger/store'
import { OpError } from './op-error.js'
import { defineOp, ok, type OpContext } from './operation.js'
import { pageOf } from './schemas.js'

const deprecationSchema = z.object({ at: z.string(), reason: z.string(), sunset_at: z.string().nullable() })

export const eventTypeViewSchema = z.object({
  name: z.string(),
  description: z.string(),
  exposure: z.enum(['webhook', 'internal']),
  group: z.string(),
  /** The JSON Schema (2020-12) an event's `data` must match; null: any object. */
  schema: z.record(z.string(), z.unknown()).nullable(),
  /** Built into hookledger (present without a declaration; its exposure is fixed). */
  builtin: z.boolean(),
  /** Declared by this installation (a row of the catalog; a built-in may be, to add a schema). */
  declared: z.boolean(),
  /** Published by hookledger only (operational events, `webhook.test`): applications cannot. */
  reserved: z.boolean(),
  deprecated: deprecationSchema.nullable(),
})

export function eventTypeView(catalog: EventCatalog, d: EventTypeDeclaration): z.input<typeof eventTypeViewSchema> {
  return {
    name: d.type,
    description: d.description,
    exposure: d.exposure,
    group: d.group,
    schema: d.schema ? { ...d.schema } : null,
    builtin: catalog.isBuiltin(d.type),
    declared: d.declared === true,
    reserved: catalog.isReserved(d.type),
    deprecated: d.deprecated ? { ...d.deprecated } : null,
  }
}

const catalogCtx = (ctx: OpContext) => ({ now: ctx.deps.clock.now(), actor: ctx.actor })

/** A change's outcome as the type's view, read back from the catalog it produced. */
async function changed(ctx: OpContext, name: string, change: CatalogChange) {
  if ('refusal' in change) throw refusalError(change.refusal)
  if (change.changed) ctx.deps.logger.info({ event_type: name, actor: ctx.actor }, 'catalog:changed')
  const catalog = await eventCatalogRead(ctx.deps.db, ctx.deps.catalog, [name])
  return eventTypeView(catalog, catalog.get(name)!)
}

const refusalError = (r: CatalogRefusal) => new OpError(r.code, r.message, r.field)

export const eventTypesList = defineOp({
  name: 'event_types.list',
  summary: 'Every event type of the installation: the built-in ones and those it declared, with exposure, schema and deprecation',
  scope: 'operator',
  http: { method: 'GET', path: '/api/operator/event_types' },
  input: z.strictObject({ exposure: z.enum(['webhook', 'internal']).optional() }),
  output: pageOf(eventTypeViewSchema),
  async handler(ctx, input) {
    const catalog = await eventCatalogRead(ctx.deps.db, ctx.deps.catalog)
    const data = catalog
      .all()
      .filter((d) => input.exposure === undefined || d.exposure === input.exposure)
      .map((d) => eventTypeView(catalog, d))
    // The whole catalog fits one page; the list shape is kept for uniformity.
    return ok({ data, next_cursor: null })
  },
})

export const eventTypesDeclare = defineOp({
  name: 'event_types.declare',
  summary: 'Declare an event type (exposure webhook or internal, optionally a JSON Schema for data): applications may publish it from now on',
  scope: 'operator',
  http: { method: 'POST', path: '/api/operator/event_types' },
  statuses: [201],
  input: eventTypeDeclareInputSchema,
  output: eventTypeViewSchema,
  async handler(ctx, input) {
    const view = await changed(ctx, input.name, await eventTypeDeclare(ctx.deps.db, ctx.deps.catalog, catalogCtx(ctx), input))
    return { status: 201, body: view }
  },
})

export const eventTypesUpdate = defineOp({
  name: 'event_types.update',
  summary: 'Change a declared event type: description, exposure (not a built-in\'s), group, schema (null removes it)',
  scope: 'operator',
  http: { method: 'PATCH', path: '/api/operator/event_types/:name' },
  input: eventTypeUpdateInputSchema,
  output: eventTypeViewSchema,
  async handler(ctx, input) {
    return ok(await changed(ctx, input.name, await eventTypeUpdate(ctx.deps.db, ctx.deps.catalog, catalogCtx(ctx), input)))
  },
})

export const eventTypesDeprecate = defineOp({
  name: 'event_types.deprecate',
  summary: 'Deprecate a declared event type: still published (with a Deprecation header) until sunset_at, if given, then refused; no new subscriptions name it',
  scope: 'operator',
  http: { method: 'POST', path: '/api/operator/event_types/:name/deprecate' },
  input: eventTypeDeprecateInputSchema,
  output: eventTypeViewSchema,
  async handler(ctx, input) {
    return ok(await changed(ctx, input.name, await eventTypeDeprecate(ctx.deps.db, ctx.deps.catalog, catalogCtx(ctx), input)))
  },
})
