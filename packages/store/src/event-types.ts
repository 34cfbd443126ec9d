/**
 * The installation's event catalog in the database (migration 0005): `event_types` rows, read
 * by every path that consults the catalog (publish, fan-out, endpoint globs, the lists) and
 * changed only through hookledger_write by the entries `event_type.declared|updated|deprecated`,
 * so the ledger holds every change and replay rebuilds the table from it.
 */
import { sql } from 'kysely'
import {
  catalogWithDeclared,
  eventTypeDeclareDecision,
  eventTypeDeprecateDecision,
  eventTypeUpdateDecision,
  type CatalogRefusal,
  type DeclaredEventType,
  type EventCatalog,
  type EventTypeDeclareInput,
  type EventTypeDeprecateInput,
  type EventTypeUpdateInput,
  type LedgerEntryOf,
  type LedgerKind,
  type LedgerPayloads,
} from '@hookledger/core'
import type { Db, Trx } from './database/database.js'
import { ledgerWrite } from './ledger-write.js'
import { OPERATOR_OWNER } from './access/api-tokens.js'

/** Who and when, for a catalog change (installation-wide: its entries carry the operator owner `*`). */
export interface CatalogCommandContext {
  readonly now: Date
  readonly actor: string
}

/** The columns of `event_types` as core's row (one statement text, shared with the publisher's read). */
export const EVENT_TYPE_COLUMNS = sql.raw(
  `name, description, exposure, group_name as "group", data_schema as schema, deprecated_at, deprecation_reason, sunset_at, declared_at, updated_at`,
)

/** Declared rows, all or only `names`, by name. */
export async function eventTypeRows(db: Db | Trx, names?: readonly string[], lock = false): Promise<DeclaredEventType[]> {
  return (
    await sql<DeclaredEventType>`
      select ${EVENT_TYPE_COLUMNS} from event_types
      ${names === undefined ? sql`` : sql`where name = any(${[...names]}::text[])`}
      order by name ${lock ? sql`for update` : sql``}
    `.execute(db)
  ).rows
}

/**
 * The catalog as it stands: `base` (the built-ins, and a catalog file's entries) with the
 * declared rows laid over. `types` limits the read to the rows a caller will look at (a
 * publish or fan-out batch); without it every row is read (lists, glob checks).
 */
export async function eventCatalogRead(db: Db | Trx, base: EventCatalog, types?: readonly string[]): Promise<EventCatalog> {
  if (types !== undefined && types.length === 0) return base
  return catalogWithDeclared(base, await eventTypeRows(db, types === undefined ? undefined : [...new Set(types)]))
}

/** A catalog change's outcome: the row after it, or the refusal (nothing written). */
export type CatalogChange = { readonly row: DeclaredEventType; readonly changed: boolean } | { readonly refusal: CatalogRefusal }

function catalogEntry<K extends LedgerKind & `event_type.${string}`>(kind: K, ctx: CatalogCommandContext, payload: LedgerPayloads[K]): LedgerEntryOf<K> {
  return { kind, occurred_at: ctx.now, owner_id: OPERATOR_OWNER, endpoint_id: null, delivery_id: null, event_id: null, actor: ctx.actor, payload } as LedgerEntryOf<K>
}

/** hookledger_write's refusal codes (the SQL's hint) that a concurrent change can cause. */
const RACED: Record<string, CatalogRefusal['code']> = { event_type_exists: 'event_type_exists', event_type_not_declared: 'not_found', event_type_not_live: 'event_type_deprecated' }

async function written(trx: Trx, entry: LedgerEntryOf<`event_type.${string}` & LedgerKind>): Promise<CatalogRefusal | null> {
  try {
    await sql`savepoint event_type_write`.execute(trx)
    await ledgerWrite(trx, { entries: [entry] })
    return null
  } catch (err) {
    const code = RACED[(err as { hint?: string }).hint ?? '']
    if (code === undefined) throw err
    // Another transaction changed the row between our read and our write: its outcome stands.
    await sql`rollback to savepoint event_type_write`.execute(trx)
    return { code, message: (err as Error).message.replace(/^[a-z_]+: /, ''), field: 'name' }
  }
}

async function rowOf(trx: Trx, name: string): Promise<DeclaredEventType> {
  return (await eventTypeRows(trx, [name]))[0]!
}

/** `event_types.declare`: a new row and its `event_type.declared` entry, one transaction. */
export async function eventTypeDeclare(db: Db, base: EventCatalog, ctx: CatalogCommandContext, input: EventTypeDeclareInput): Promise<CatalogChange> {
  return db.transaction().execute(async (trx) => {
    const catalog = await eventCatalogRead(trx, base, [input.name])
    const existing = (await eventTypeRows(trx, [input.name]))[0] ?? null
    const decision = eventTypeDeclareDecision(catalog, existing, input)
    if ('refusal' in decision) return decision
    const raced = await written(trx, catalogEntry('event_type.declared', ctx, decision.payload))
    if (raced) return { refusal: raced }
    return { row: await rowOf(trx, input.name), changed: true }
  })
}

/** `event_types.update`: the fields that change, in one `event_type.updated` entry (none: nothing written). */
export async function eventTypeUpdate(db: Db, base: EventCatalog, ctx: CatalogCommandContext, input: EventTypeUpdateInput): Promise<CatalogChange> {
  return db.transaction().execute(async (trx) => {
    const existing = (await eventTypeRows(trx, [input.name], true))[0] ?? null
    const decision = eventTypeUpdateDecision(base, existing, input)
    if ('refusal' in decision) return decision
    if (decision.payload === null) return { row: existing!, changed: false }
    const raced = await written(trx, catalogEntry('event_type.updated', ctx, decision.payload))
    if (raced) return { refusal: raced }
    return { row: await rowOf(trx, input.name), changed: true }
  })
}

/** `event_types.deprecate`: marks the row, with its `event_type.deprecated` entry. */
export async function eventTypeDeprecate(db: Db, base: EventCatalog, ctx: CatalogCommandContext, input: EventTypeDeprecateInput): Promise<CatalogChange> {
  return db.transaction().execute(async (trx) => {
    const existing = (await eventTypeRows(trx, [input.name], true))[0] ?? null
    const decision = eventTypeDeprecateDecision(base, existing, input, ctx.now)
    if ('refusal' in decision) return decision
    const raced = await written(trx, catalogEntry('event_type.deprecated', ctx, decision.payload))
    if (raced) return { refusal: raced }
    return { row: await rowOf(trx, input.name), changed: true }
  })
}
