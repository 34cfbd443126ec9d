/**
 * The rules a published event must pass, whichever way it arrives: `POST /api/events` (ops)
 * or `@hookledger/publisher` inside an application's transaction. One definition, so both
 * refuse the same events with the same code, message and field.
 */
import { randomUUID } from 'node:crypto'
import { z } from 'zod'
import { inputIssueMessage } from '../input-messages.js'
import type { EventCatalog } from './event-catalog.js'
import { dataSchemaViolation } from './event-data-schema.js'

/** `data` is identifiers and flags only; larger than this encoded is refused with 413. */
export const EVENT_DATA_MAX_BYTES = 16 * 1024

/** Deepest JSON nesting accepted anywhere in an input (thin event data is shallow). */
export const INPUT_MAX_DEPTH = 32

/** Owner ids, as tokens and the CLI spell them. */
export const OWNER_ID_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/

/** Event ids: Standard Webhooks ids must not contain `.`; we keep them URL- and header-safe. */
export const eventIdSchema = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9_-]+$/, 'only letters, digits, `_` and `-`')

const EARLIEST = Date.parse('1970-01-01T00:00:00Z')
const LATEST = Date.parse('9999-12-31T23:59:59Z')

/** An ISO 8601 timestamp with offset, between 1970 and 9999 (so the database can store it). */
export const isoTimestampSchema = z.iso.datetime({ offset: true }).refine((value) => {
  const at = Date.parse(value)
  return at >= EARLIEST && at <= LATEST
}, 'must be an ISO 8601 timestamp between 1970 and 9999')

/** What a publisher sends. `id` and `occurred_at` default to a fresh id and now. */
export const publishInputSchema = z.strictObject({
  id: eventIdSchema.optional(),
  type: z.string().min(1).max(200),
  subject: z.string().min(1).max(2048),
  occurred_at: isoTimestampSchema.optional(),
  data: z.record(z.string(), z.unknown()).default({}),
})
export type PublishInput = z.input<typeof publishInputSchema>

/** A refusal of an input, as every way in renders it (HTTP problem, library error). */
/** The codes of an event's refusal (the HTTP path maps each to its status, in one table). */
export type InputRefusalCode =
  | 'invalid_input'
  | 'unknown_event_type'
  | 'reserved_event_type'
  | 'payload_too_large'
  | 'event_id_conflict'
  | 'event_data_invalid'
  | 'event_type_deprecated'
  | 'owner_suspended'
  | 'owner_rate_limited'

export interface InputRefusal {
  readonly code: InputRefusalCode
  readonly message: string
  /** The input field at fault, as a dotted path (`data.x`). */
  readonly field?: string
  /** For `data` that breaks its type's schema: where, as a JSON pointer into the event (`/data/order_id`). */
  readonly pointer?: string
  /** `owner_rate_limited`: from when the owner may publish again (ISO). */
  readonly retry_at?: string
}

/** An input problem: 400 `invalid_input`, naming the field in the message too. */
export function invalidInputRefusal(field: string | undefined, message: string): InputRefusal {
  return { code: 'invalid_input', message: field ? `${field}: ${message}` : message, ...(field ? { field } : {}) }
}

// NUL cannot be stored in a PostgreSQL text or jsonb value, and a lone surrogate cannot be
// encoded as UTF-8; both are refused, naming the field, instead of failing in the database.
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** The first problem with a raw (parsed JSON or query) input that no schema should have to see. */
export function unstorableProblem(value: unknown): { field: string; message: string } | null {
  const stack: { value: unknown; path: string[] }[] = [{ value, path: [] }]
  while (stack.length > 0) {
    const { value: v, path } = stack.pop()!
    if (typeof v === 'string') {
      if (UNSTORABLE.test(v)) return { field: path.join('.'), message: 'contains a NUL character or invalid UTF-16' }
    } else if (v !== null && typeof v === 'object') {
      if (path.length >= INPUT_MAX_DEPTH) return { field: path.join('.'), message: `is nested deeper than ${INPUT_MAX_DEPTH} levels` }
      for (const [key, child] of Object.entries(v)) {
        if (UNSTORABLE.test(key)) return { field: path.join('.'), message: 'has a key with a NUL character or invalid UTF-16' }
        stack.push({ value: child, path: [...path, key] })
      }
    }
  }
  return null
}

/** A zod failure as the field it names and its message (an unknown key names that key). */
export function zodProblem(error: z.ZodError): { field: string; message: string } {
  const issue = error.issues[0]!
  const path = issue.path.map(String)
  if (issue.code === 'unrecognized_keys') return { field: [...path, issue.keys[0] ?? ''].join('.'), message: 'is not a known field' }
  return { field: path.join('.'), message: inputIssueMessage(issue) }
}

/** How to declare a type, for every refusal of an undeclared one (HTTP, publisher, CLI alike). */
export function declareHint(type: string): string {
  return `declare it first: POST /api/operator/event_types {"name":"${type}","exposure":"webhook","description":"…"} ` +
    `(operator token; or \`hookledger op event_types.declare --json '{"name":"${type}","exposure":"webhook"}'\`, or the admin UI's Event types page)`
}

/**
 * What the catalog, the size limit and the type's schema say of a well-formed event: null when
 * it may be stored. `now` decides whether a deprecated type's sunset has passed.
 */
export function eventRefusal(
  catalog: EventCatalog,
  event: { readonly type: string; readonly data: Record<string, unknown> },
  now: Date = new Date(),
): InputRefusal | null {
  if (catalog.isReserved(event.type)) {
    const how = event.type === 'webhook.test' ? ' (send one with webhooks.send_test: POST /api/admin/webhooks/:id/send_test)' : ''
    return { code: 'reserved_event_type', message: `event type "${event.type}" is published by hookledger itself, not by applications${how}`, field: 'type' }
  }
  const declaration = catalog.isKnown(event.type) ? catalog.get(event.type) : undefined
  if (declaration === undefined) {
    return { code: 'unknown_event_type', message: `event type "${event.type}" is not declared in the catalog; ${declareHint(event.type)}`, field: 'type' }
  }
  const sunset = declaration.deprecated?.sunset_at
  if (sunset && Date.parse(sunset) <= now.getTime()) {
    return { code: 'event_type_deprecated', message: `event type "${event.type}" was deprecated${declaration.deprecated!.reason ? ` (${declaration.deprecated!.reason})` : ''} and is refused since ${sunset}`, field: 'type' }
  }
  const bytes = Buffer.byteLength(JSON.stringify(event.data), 'utf8')
  if (bytes > EVENT_DATA_MAX_BYTES) {
    return { code: 'payload_too_large', message: `data is ${bytes} bytes encoded; the limit is ${EVENT_DATA_MAX_BYTES}`, field: 'data' }
  }
  if (declaration.schema) {
    const violation = dataSchemaViolation(declaration.schema, event.data)
    if (violation) {
      return { code: 'event_data_invalid', message: `data does not match the schema of "${event.type}": ${violation.message}`, field: violation.field, pointer: violation.pointer }
    }
  }
  return null
}

/** The warning an accepted event carries: its type is deprecated (null: none). */
export function eventWarning(catalog: EventCatalog, type: string): string | null {
  const deprecated = catalog.get(type)?.deprecated
  if (!deprecated) return null
  const until = deprecated.sunset_at ? `; refused from ${deprecated.sunset_at}` : ''
  return `event type "${type}" is deprecated since ${deprecated.at}${deprecated.reason ? ` (${deprecated.reason})` : ''}${until}`
}

/** The refusal of a second publication of `id` whose content differs from the stored one. */
export function eventConflictRefusal(id: string): InputRefusal {
  return {
    code: 'event_id_conflict',
    message: `event "${id}" was already published with a different type, subject, data or occurred_at; publish a change under a new id`,
    field: 'id',
  }
}

/** A fresh event id, for events published without one. */
export const eventIdMint = (): string => `evt_${randomUUID().replaceAll('-', '')}`
