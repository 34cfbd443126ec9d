/**
 * The installation's declared event types (the `event_types` table) and the rules for changing
 * them: who may declare what, and how declared types join the built-in catalog. Pure; the store
 * reads and writes the rows, ops call these decisions, the publisher and the fan-out merge.
 *
 * Built-ins (the seed's 39 and the operational events) are present without any declaration.
 * A built-in may be declared only with its own exposure — to give it a schema or a better
 * description — never to change who receives it; reserved names cannot be declared at all.
 */
import { z } from 'zod'
import { catalogOf, DEFAULT_EXTENSION_GROUP, isReservedEventTypeName, type EventCatalog, type EventTypeDeclaration, type Exposure } from './event-catalog.js'
import { isValidEventType } from './event-glob.js'
import { dataSchemaProblem } from './event-data-schema.js'
import { declareHint, isoTimestampSchema } from './event-rules.js'
import type { LedgerPayloads } from '../model/ledger-entry.js'

/** A row of `event_types`, as the store reads it. */
export interface DeclaredEventType {
  readonly name: string
  readonly description: string
  readonly exposure: Exposure
  readonly group: string
  readonly schema: Record<string, unknown> | null
  readonly deprecated_at: Date | null
  readonly deprecation_reason: string | null
  readonly sunset_at: Date | null
  readonly declared_at: Date
  readonly updated_at: Date
}

/** Codes of a refused catalog change (the HTTP path maps each to its status). */
export type CatalogRefusalCode = 'invalid_input' | 'reserved_event_type' | 'event_type_exists' | 'event_type_builtin' | 'event_type_deprecated' | 'not_found'

export interface CatalogRefusal {
  readonly code: CatalogRefusalCode
  readonly message: string
  readonly field?: string
}

export const eventTypeNameSchema = z
  .string()
  .min(1)
  .max(200)
  .refine(isValidEventType, 'must be dot-separated segments of [A-Za-z0-9_] (e.g. order.created), at most 200 characters')

const descriptionSchema = z.string().max(500)
const groupSchema = z.string().trim().min(1).max(64)
const exposureSchema = z.enum(['webhook', 'internal'])
/** A JSON Schema object; whether it is a usable one is `dataSchemaProblem`'s to say (400 naming `schema`). */
const dataSchemaInput = z.record(z.string(), z.unknown())

/** `event_types.declare`: exposure is required, so nobody gets `internal` (never delivered) by omission. */
export const eventTypeDeclareInputSchema = z.strictObject({
  name: eventTypeNameSchema,
  description: descriptionSchema.default(''),
  exposure: exposureSchema,
  group: groupSchema.default(DEFAULT_EXTENSION_GROUP),
  schema: dataSchemaInput.nullable().default(null),
})
export type EventTypeDeclareInput = z.output<typeof eventTypeDeclareInputSchema>

/** `event_types.update`: the fields to change; `schema: null` removes the schema. */
export const eventTypeUpdateInputSchema = z.strictObject({
  name: eventTypeNameSchema,
  description: descriptionSchema.optional(),
  exposure: exposureSchema.optional(),
  group: groupSchema.optional(),
  schema: dataSchemaInput.nullable().optional(),
})
export type EventTypeUpdateInput = z.output<typeof eventTypeUpdateInputSchema>

/** `event_types.deprecate`: why, and optionally when publishing it stops being accepted. */
export const eventTypeDeprecateInputSchema = z.strictObject({
  name: eventTypeNameSchema,
  reason: z.string().max(500).default(''),
  sunset_at: isoTimestampSchema.optional(),
})
export type EventTypeDeprecateInput = z.output<typeof eventTypeDeprecateInputSchema>

const refuse = (code: CatalogRefusalCode, message: string, field?: string): { refusal: CatalogRefusal } => ({
  refusal: { code, message, ...(field ? { field } : {}) },
})

/**
 * Declares a type: the entry's payload, or why not. `catalog` is the current one (built-ins,
 * declared rows); `existing` the type's row if declared already.
 */
export function eventTypeDeclareDecision(
  catalog: EventCatalog,
  existing: DeclaredEventType | null,
  input: EventTypeDeclareInput,
): { payload: LedgerPayloads['event_type.declared'] } | { refusal: CatalogRefusal } {
  const { name } = input
  if (catalog.isReserved(name)) {
    return refuse('reserved_event_type', `"${name}" is reserved for hookledger's own events (webhook.test, webhook.endpoint.*, webhook.delivery.*); pick another name`, 'name')
  }
  if (existing !== null) {
    return refuse('event_type_exists', `event type "${name}" is already declared (since ${existing.declared_at.toISOString()}); change it with PATCH /api/operator/event_types/${name}`, 'name')
  }
  const builtin = catalog.isBuiltin(name) ? catalog.get(name) : undefined
  if (builtin && builtin.exposure !== input.exposure) {
    return refuse('event_type_builtin', `"${name}" is built in with exposure "${builtin.exposure}"; it can be declared (to add a schema or a description) only with that exposure`, 'exposure')
  }
  const problem = input.schema === null ? null : dataSchemaProblem(input.schema)
  if (problem) return refuse('invalid_input', `schema: ${problem}`, 'schema')
  return {
    payload: {
      name,
      description: input.description,
      exposure: input.exposure,
      group: builtin && input.group === DEFAULT_EXTENSION_GROUP ? builtin.group : input.group,
      schema: input.schema,
    },
  }
}

/** Changes a declared type: the entry's payload (only what changes; null: nothing does), or why not. */
export function eventTypeUpdateDecision(
  catalog: EventCatalog,
  existing: DeclaredEventType | null,
  input: EventTypeUpdateInput,
): { payload: LedgerPayloads['event_type.updated'] | null } | { refusal: CatalogRefusal } {
  const { name } = input
  if (existing === null) {
    const hint = catalog.isBuiltin(name) ? ` ("${name}" is built in: declare it first to give it a schema or description)` : `; ${declareHint(name)}`
    return refuse('not_found', `event type "${name}" is not declared${hint}`, 'name')
  }
  if (input.exposure !== undefined && input.exposure !== existing.exposure && catalog.isBuiltin(name)) {
    return refuse('event_type_builtin', `"${name}" is built in with exposure "${existing.exposure}"; its exposure cannot change`, 'exposure')
  }
  if (input.schema !== undefined && input.schema !== null) {
    const problem = dataSchemaProblem(input.schema)
    if (problem) return refuse('invalid_input', `schema: ${problem}`, 'schema')
  }
  const changes: Omit<LedgerPayloads['event_type.updated'], 'name'> = {
    ...(input.description !== undefined && input.description !== existing.description ? { description: input.description } : {}),
    ...(input.exposure !== undefined && input.exposure !== existing.exposure ? { exposure: input.exposure } : {}),
    ...(input.group !== undefined && input.group !== existing.group ? { group: input.group } : {}),
    ...(input.schema !== undefined && JSON.stringify(input.schema) !== JSON.stringify(existing.schema) ? { schema: input.schema } : {}),
  }
  return { payload: Object.keys(changes).length === 0 ? null : { name, ...changes } }
}

/** Deprecates a declared type: the entry's payload, or why not. */
export function eventTypeDeprecateDecision(
  catalog: EventCatalog,
  existing: DeclaredEventType | null,
  input: EventTypeDeprecateInput,
  now: Date,
): { payload: LedgerPayloads['event_type.deprecated'] } | { refusal: CatalogRefusal } {
  const { name } = input
  if (existing === null) {
    const why = catalog.isBuiltin(name) ? `"${name}" is built in and cannot be deprecated` : `event type "${name}" is not declared`
    return refuse('not_found', why, 'name')
  }
  if (existing.deprecated_at !== null) {
    return refuse('event_type_deprecated', `event type "${name}" is already deprecated (since ${existing.deprecated_at.toISOString()})`, 'name')
  }
  if (catalog.isBuiltin(name)) return refuse('event_type_builtin', `"${name}" is built in and cannot be deprecated`, 'name')
  if (input.sunset_at !== undefined && Date.parse(input.sunset_at) < now.getTime()) {
    return refuse('invalid_input', 'sunset_at: must not be in the past', 'sunset_at')
  }
  return { payload: { name, reason: input.reason, sunset_at: input.sunset_at === undefined ? null : new Date(input.sunset_at).toISOString() } }
}

/**
 * The catalog with the declared rows laid over `base` (the built-ins, plus a catalog file's
 * entries on an old install). A built-in keeps its exposure and group whatever a row says (the
 * declare decision refuses otherwise; this holds even for a row written around it), and a
 * reserved name stays hookledger's; a row replaces a file entry of the same name.
 */
export function catalogWithDeclared(base: EventCatalog, rows: readonly DeclaredEventType[]): EventCatalog {
  if (rows.length === 0) return base
  const byType = new Map(base.all().map((d) => [d.type, d]))
  for (const row of rows) {
    const builtin = base.isBuiltin(row.name) ? base.get(row.name) : undefined
    if (builtin?.publishedBy === 'hookledger' || (builtin === undefined && isReservedEventTypeName(row.name))) continue
    const declared: EventTypeDeclaration = {
      type: row.name,
      exposure: builtin?.exposure ?? row.exposure,
      group: builtin?.group ?? row.group,
      description: row.description !== '' ? row.description : (builtin?.description ?? ''),
      schema: row.schema,
      // Built-ins are never deprecated: a row cannot stop what the product promises.
      deprecated: row.deprecated_at === null || builtin
        ? null
        : { at: row.deprecated_at.toISOString(), reason: row.deprecation_reason ?? '', sunset_at: row.sunset_at?.toISOString() ?? null },
      declared: true,
    }
    byType.set(row.name, Object.freeze(declared))
  }
  return catalogOf(byType.values())
}
