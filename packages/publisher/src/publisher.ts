import {
  assertDbSchemaName,
  canonicalJson,
  catalogWithDeclared,
  createEventCatalog,
  DEFAULT_DB_SCHEMA,
  eventConflictRefusal,
  eventRefusal,
  eventWarning,
  ownerPublishRefusal,
  type OwnerPublishRefusalAnswer,
  type DeclaredEventType,
  type EventCatalog,
} from '@hookledger/core'
import { eventPrepare, type EventToPublish, type PreparedEvent } from './event-prepare.js'
import { PublishError } from './publish-error.js'
import { catalogStatement, eventsJson, publishStatement, sameContentStatement } from './publish-statement.js'
import { statementRunnerFor, type PublishTransaction } from './transaction-handle.js'

export interface PublisherOptions {
  /**
   * The built-in types the install's declared ones (`event_types`, read from the database in
   * each publishing transaction) are laid over. Default: the built-in catalog, as the service
   * has it. Not needed any more for declared types (deprecated: the database is the one catalog;
   * `createEventCatalog(entries)` of an old catalog file still adds its entries here).
   */
  readonly catalog?: EventCatalog
  /** The service's `HOOKLEDGER_DB_SCHEMA`. Default `hookledger`. */
  readonly schema?: string
  /** Who the ledger says published (`event.published` entries). Default `system`. */
  readonly actor?: string
  /**
   * The service's own route only (its database role alone may call it, migration 0018): the
   * caller has taken the owner's publish limit already (`hookledger_publish_admit`, a statement
   * of its own), so the publish checks suspension but not the limit. An application's role is
   * refused it; leave it unset.
   */
  readonly admitted?: boolean
}

/** Per event: its id, and whether this call stored it (false: it was already there, the same). */
export interface PublishOutcome {
  readonly id: string
  readonly created: boolean
  /** Present when the event was accepted with a warning: its type is deprecated (until its sunset). */
  readonly warning?: string
  /** With `warning`: since when the type is deprecated, and from when it is refused (null: not planned). */
  readonly deprecated?: { readonly at: string; readonly sunset_at: string | null }
}

export interface Publisher {
  /** Publishes one event inside `trx`; returns its id. See {@link publishEvents}. */
  publish(trx: PublishTransaction, event: EventToPublish): Promise<string>
  /** Publishes events inside `trx` in one statement; returns their ids in order. */
  publishMany(trx: PublishTransaction, events: readonly EventToPublish[]): Promise<string[]>
  /**
   * As `publishMany`, saying which ones were new. `now` overrides the database's clock and
   * `actor` the publisher's (the service's own route passes its clock and the token's actor).
   */
  publishEvents(trx: PublishTransaction, events: readonly EventToPublish[], options?: { now?: Date; actor?: string }): Promise<PublishOutcome[]>
}

/**
 * A publisher for one hookledger install (its catalog and schema). Events are written into the
 * caller's transaction — a transactional outbox: they exist, and are delivered, exactly when
 * that transaction commits.
 */
export function createPublisher(options: PublisherOptions = {}): Publisher {
  const catalog = options.catalog ?? createEventCatalog()
  const schema = assertDbSchemaName(options.schema ?? DEFAULT_DB_SCHEMA)
  const actor = options.actor ?? 'system'
  const insert = publishStatement(schema, options.admitted ? 'admitted' : 'limited')
  const compare = sameContentStatement(schema)
  const catalogRead = catalogStatement(schema)

  async function publishEvents(trx: PublishTransaction, events: readonly EventToPublish[], opts: { now?: Date; actor?: string } = {}): Promise<PublishOutcome[]> {
    const run = statementRunnerFor(trx)
    if (!Array.isArray(events)) throw new TypeError('publishMany takes an array of events')
    const at = (i: number) => (events.length === 1 ? undefined : i)
    const prepared = events.map((e, i) => eventPrepare(e, at(i)))
    // The catalog as the service sees it: the declared rows of these types, in this transaction.
    const types = [...new Set(prepared.map((e) => e.type))]
    const rows = types.length === 0 ? [] : await run<DeclaredEventType>(catalogRead, [types]).catch((err: unknown) => {
      // 42P01/3F000: no catalog there — the wrong schema, or an install not migrated to 0005.
      const code = (err as { code?: unknown }).code
      if (code !== '42P01' && code !== '3F000') throw err
      throw new Error(`no hookledger catalog at "${schema}".event_types: is the schema the service's HOOKLEDGER_DB_SCHEMA, and is it migrated (hookledger migrate)?`, { cause: err })
    })
    const current = catalogWithDeclared(catalog, rows)
    const now = opts.now ?? new Date()
    prepared.forEach((e, i) => {
      const refusal = eventRefusal(current, e, now)
      if (refusal) throw new PublishError(refusal, at(i))
    })
    const { unique, indexOf } = withinBatch(prepared)
    if (unique.length === 0) return []
    // One call per owner (each write function touches one owner's rows); outcomes keep the batch's order.
    const outcomes: [number, boolean, boolean | null][] = []
    const sameOf = new Map<number, boolean | null>()
    // In owner order: a rate-limited owner's bucket row is locked until commit (migration 0009),
    // so two transactions publishing for the same owners take those locks in the same order.
    const groups = [...groupByOwner(unique)].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    // A batch spanning owners: a later owner's refusal (suspended, over its limit) must take back
    // what the earlier owners' calls wrote, so the batch is refused whole, before anything stays.
    const spans = groups.length > 1
    if (spans) await run(`savepoint hookledger_publish_batch`, [])
    for (const [owner, members] of groups) {
      const json = eventsJson(members.map((m) => m.event))
      const [row] = await run<{ outcomes: [number, boolean, boolean | null][] | OwnerPublishRefusalAnswer }>(insert, [owner, json, opts.now?.toISOString() ?? null, opts.actor ?? actor])
      // The owner is suspended or over its publish limit (migration 0009): refused before anything
      // was written, the caller's transaction intact.
      if (!Array.isArray(row!.outcomes)) {
        if (spans) await run(`rollback to savepoint hookledger_publish_batch`, [])
        throw new PublishError(ownerPublishRefusal(owner, row!.outcomes))
      }
      const answered = row!.outcomes.map(([k, created, same]) => [members[k - 1]!.n, created, same] as [number, boolean, boolean | null])
      outcomes.push(...answered)
      for (const [n, , same] of answered) sameOf.set(n, same)
      // Ids stored by a transaction that committed after this call began: compare afresh.
      if (answered.some(([, created, same]) => !created && same === null)) {
        const [again] = await run<{ outcomes: [number, boolean | null][] }>(compare, [owner, json])
        for (const [k, same] of again!.outcomes) sameOf.set(members[k - 1]!.n, same)
      }
    }
    if (spans) await run(`release savepoint hookledger_publish_batch`, [])
    outcomes.sort((a, b) => a[0] - b[0])
    for (const [n, created] of outcomes) {
      if (!created && sameOf.get(n) !== true) {
        const event = unique[n - 1]!
        throw new PublishError(eventConflictRefusal(event.id), events.length === 1 ? undefined : prepared.indexOf(event))
      }
    }
    const createdOf = new Map(outcomes.map(([n, created]) => [unique[n - 1]!, created]))
    // A repeat within the batch is the same event: new once, then known.
    const seen = new Set<PreparedEvent>()
    return prepared.map((_, i) => {
      const event = unique[indexOf[i]!]!
      const first = !seen.has(event)
      seen.add(event)
      const warning = eventWarning(current, event.type)
      const deprecated = current.get(event.type)?.deprecated
      return {
        id: event.id,
        created: first && createdOf.get(event) === true,
        ...(warning && deprecated ? { warning, deprecated: { at: deprecated.at, sunset_at: deprecated.sunset_at } } : {}),
      }
    })
  }

  return {
    publishEvents,
    publish: async (trx, event) => (await publishEvents(trx, [event]))[0]!.id,
    publishMany: async (trx, events) => (await publishEvents(trx, events)).map((o) => o.id),
  }
}

/** The batch's events by owner, each with its 1-based place in the batch. */
function groupByOwner(events: readonly PreparedEvent[]): Map<string, { n: number; event: PreparedEvent }[]> {
  const groups = new Map<string, { n: number; event: PreparedEvent }[]>()
  events.forEach((event, i) => {
    const list = groups.get(event.owner_id)
    if (list) list.push({ n: i + 1, event })
    else groups.set(event.owner_id, [{ n: i + 1, event }])
  })
  return groups
}

/**
 * Collapses repeats of an id within one batch: the same content is one event (idempotent, as
 * across calls), different content is the conflict — refused before anything is written.
 */
function withinBatch(prepared: readonly PreparedEvent[]): { unique: PreparedEvent[]; indexOf: number[] } {
  const byKey = new Map<string, number>()
  const unique: PreparedEvent[] = []
  const indexOf = prepared.map((e, i) => {
    const key = JSON.stringify([e.owner_id, e.id])
    const at = byKey.get(key)
    if (at === undefined) {
      byKey.set(key, unique.length)
      unique.push(e)
      return unique.length - 1
    }
    if (!sameEvent(unique[at]!, e)) throw new PublishError(eventConflictRefusal(e.id), i)
    return at
  })
  return { unique, indexOf }
}

// Key order does not make two events different (as jsonb equality in the database).
const sameEvent = (a: PreparedEvent, b: PreparedEvent) =>
  a.type === b.type && a.subject === b.subject && canonicalJson(a.data) === canonicalJson(b.data) &&
  (a.occurred_at === null || b.occurred_at === null || Date.parse(a.occurred_at) === Date.parse(b.occurred_at))

const defaultPublisher = createPublisher()

/**
 * Publishes `event` inside `trx` (a Kysely transaction of any database type, or a pg client
 * inside BEGIN … COMMIT) against the install's catalog (the built-ins and the types declared in its
 * `event_types`, read in `trx`), into the `hookledger` schema; returns the
 * event id. The same id again with the same content is a no-op; with different content,
 * a PublishError 409 `event_id_conflict`.
 * @throws PublishError what `POST /api/events` would answer: 400, 409, 413 or 422
 */
export const publish = (trx: PublishTransaction, event: EventToPublish): Promise<string> => defaultPublisher.publish(trx, event)

/** {@link publish} for many events, in one statement; returns their ids in order. */
export const publishMany = (trx: PublishTransaction, events: readonly EventToPublish[]): Promise<string[]> =>
  defaultPublisher.publishMany(trx, events)
