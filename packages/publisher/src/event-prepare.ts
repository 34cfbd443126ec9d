import {
  eventIdMint,
  invalidInputRefusal,
  OWNER_ID_PATTERN,
  publishInputSchema,
  unstorableProblem,
  zodProblem,
} from '@hookledger/core'
import { PublishError } from './publish-error.js'

/** What an application publishes: a thin event, for one owner. */
export interface EventToPublish {
  /** The owner whose endpoints receive it (`default` for a single-tenant install). */
  readonly owner_id: string
  /** Built in or declared in the install's catalog (`booking.created`; `event_types.declare`). */
  readonly type: string
  /** What it happened to (`booking://42`). */
  readonly subject: string
  /** Identifiers and flags only, at most 16 KiB encoded. Default `{}`. */
  readonly data?: Record<string, unknown>
  /** The event's identity within its owner; publishing it again is a no-op. Default: a fresh id. */
  readonly id?: string
  /** When it happened: a Date or an ISO 8601 string with offset. Default: the database's now. */
  readonly occurred_at?: Date | string
}

/** An event that passed every rule, ready for the insert. */
export interface PreparedEvent {
  readonly owner_id: string
  readonly id: string
  readonly type: string
  readonly subject: string
  /** ISO 8601, or null for "the statement's now". */
  readonly occurred_at: string | null
  readonly data: Record<string, unknown>
}

/**
 * Applies the input rules `POST /api/events` applies (core's event-rules), so an event is
 * refused here exactly when the route would refuse it, with the same code. The catalog's rules
 * (declared, reserved, size, the type's schema) follow, against the catalog read from the
 * database in the same transaction (publisher.ts).
 * @throws PublishError
 */
export function eventPrepare(event: EventToPublish, index?: number): PreparedEvent {
  const refuse = (field: string | undefined, message: string) => new PublishError(invalidInputRefusal(field, message), index)
  if (event === null || typeof event !== 'object') throw refuse(undefined, 'an event is an object')
  const { owner_id, occurred_at, ...input } = event
  if (typeof owner_id !== 'string' || !OWNER_ID_PATTERN.test(owner_id)) {
    throw refuse('owner_id', `must match ${OWNER_ID_PATTERN}`)
  }
  // The route receives JSON: a Date is its ISO string there.
  const raw = occurred_at === undefined ? input : { ...input, occurred_at: occurred_at instanceof Date ? dateIso(occurred_at) : occurred_at }
  const unstorable = unstorableProblem(raw)
  if (unstorable) throw refuse(unstorable.field, unstorable.message)
  const parsed = publishInputSchema.safeParse(raw)
  if (!parsed.success) {
    const { field, message } = zodProblem(parsed.error)
    throw refuse(field, message)
  }
  return {
    owner_id,
    id: parsed.data.id ?? eventIdMint(),
    type: parsed.data.type,
    subject: parsed.data.subject,
    occurred_at: parsed.data.occurred_at ?? null,
    data: parsed.data.data,
  }
}

// An invalid Date has no ISO form: hand the schema something it refuses by name.
const dateIso = (d: Date) => (Number.isNaN(d.getTime()) ? 'Invalid Date' : d.toISOString())
