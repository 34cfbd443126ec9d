import { sql, type Selectable } from 'kysely'
import {
  decideScope,
  deliveryIdFor,
  evolveEndpoint,
  recoverEntry,
  recoverVerdict,
  requiresEmbedScope,
  RECOVER_SKIP_REASONS,
  type DeliveryRow,
  type EndpointRow,
  type EventCatalog,
  type FanoutVerdictInput,
  type LedgerEntry,
  type LedgerRecord,
  type RecoverMissedReason,
  type RecoverSkipReason,
} from '@hookledger/core'
import type { EventsTable, Trx } from '../database/database.js'
import type { CommandContext } from '../endpoint-commands.js'
import { ledgerWrite } from '../ledger-write.js'
import { eventCatalogRead } from '../event-types.js'
import { InvalidCursorError, LEDGER_RECORD_COLUMNS } from '../read-models.js'
import type { EmbedAdmits } from './fanout.js'

export interface RecoverParams {
  readonly endpoint_id: string
  readonly since: Date
  readonly until: Date
  readonly limit: number
  readonly cursor?: string | undefined
  readonly dry_run: boolean
  readonly catalog: EventCatalog
  readonly embedAdmits: EmbedAdmits
  /** The event retention: a window reaching before `now - retentionMs` counts the events pruned there. */
  readonly retentionMs: number
}

export interface RecoveredEvent {
  readonly event_id: string
  readonly type: string
  readonly published_at: Date
  readonly delivery_id: string
  readonly action: 'new_delivery' | 'new_run'
  readonly missed: RecoverMissedReason
}

export interface RecoverResult {
  /** Events of the owner in the window looked at by this call. */
  readonly scanned: number
  readonly recovered: RecoveredEvent[]
  readonly already_delivered: number
  readonly in_flight: number
  readonly skipped: Record<RecoverSkipReason, number>
  /** Where the next call starts (the window holds more events), or null. */
  readonly next_cursor: string | null
}

export type RecoverRefusal = 'endpoint_disabled' | 'endpoint_deleted'

/** An events row as the window's query reads it. */
type WindowEvent = Selectable<EventsTable>

const encodeCursor = (e: { published_at: Date; id: string }) =>
  Buffer.from(JSON.stringify([e.published_at.toISOString(), e.id])).toString('base64url')

function decodeCursor(cursor: string): [string, string] {
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown
    if (Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && typeof v[1] === 'string' && !Number.isNaN(Date.parse(v[0]))) {
      return [v[0], v[1]]
    }
  } catch {
    // fall through
  }
  throw new InvalidCursorError('cursor is not valid')
}

/**
 * `webhooks.recover`: for one live, enabled endpoint, every event of its owner published in
 * [since, until) that it matches now — the fan-out's own rules: the catalog's subscription and
 * exposure, `webhook.test` only to its target, the scope and embed port — and has no live
 * delivery of: a discarded delivery gets a new run (`delivery.redelivered`), a missing one a new
 * delivery (`delivery.enqueued`), each entry marked `recovered` with the window and why it was
 * missed (read from the event's `fanout.decided` entry and the endpoint as it was then). At most
 * `limit` events per call, in (published_at, id) order; `next_cursor` continues. A dry run
 * takes no lock and writes nothing. Lock order is `webhooks.redeliver`'s: the endpoint, then
 * its deliveries.
 */
export async function endpointRecover(
  trx: Trx,
  ctx: CommandContext,
  p: RecoverParams,
): Promise<RecoverResult | { refused: RecoverRefusal } | null> {
  const lock = p.dry_run ? sql`` : sql`for update`
  const endpoint = (
    await sql<EndpointRow>`select * from endpoints where id = ${p.endpoint_id}::uuid and owner_id = ${ctx.owner_id} ${lock}`.execute(trx)
  ).rows[0]
  if (!endpoint) return null
  if (endpoint.deleted_at !== null) return { refused: 'endpoint_deleted' }
  if (!endpoint.enabled) return { refused: 'endpoint_disabled' }

  const after = p.cursor !== undefined ? decodeCursor(p.cursor) : null
  const page = (
    await sql<WindowEvent>`
      select owner_id, id, type, subject, occurred_at, published_at, data, fanned_out_at from events
      where owner_id = ${ctx.owner_id} and published_at >= ${p.since} and published_at < ${p.until}
        ${after ? sql`and (published_at, id) > (${after[0]}::timestamptz, ${after[1]})` : sql``}
      order by published_at, id limit ${p.limit + 1}
    `.execute(trx)
  ).rows
  const events = page.slice(0, p.limit)
  const next_cursor = page.length > p.limit ? encodeCursor(events[events.length - 1]!) : null
  const skipped = Object.fromEntries(RECOVER_SKIP_REASONS.map((r) => [r, 0])) as Record<RecoverSkipReason, number>
  // Pruned events are gone from `events`, their content with them: counted once, on the first page.
  if (after === null) skipped.event_pruned = await prunedInWindow(trx, ctx, p)
  const result = { scanned: events.length, recovered: [] as RecoveredEvent[], already_delivered: 0, in_flight: 0, skipped, next_cursor }
  if (events.length === 0) return result

  const ids = events.map((e) => deliveryIdFor(endpoint.id, e.id))
  const live = (
    await sql<DeliveryRow>`
      select * from deliveries where id = any(${ids}::uuid[]) and owner_id = ${ctx.owner_id} order by id ${lock}
    `.execute(trx)
  ).rows
  const liveById = new Map(live.map((d) => [d.id, d]))
  const gone = ids.filter((id) => !liveById.has(id))
  // A delivery with entries but no row was retired (past the delivery retention).
  const retired = new Set(
    gone.length === 0
      ? []
      : (await trx.selectFrom('ledger').select('delivery_id').distinct().where('delivery_id', '=', (eb) => eb.fn.any(eb.val(gone))).where('owner_id', '=', ctx.owner_id).execute()).map((r) => r.delivery_id!),
  )
  const decisions = await trx
    .selectFrom('ledger')
    .select(['event_id', 'position', 'payload'])
    .where('event_id', '=', (eb) => eb.fn.any(eb.val(events.map((e) => e.id))))
    .where('owner_id', '=', ctx.owner_id)
    .where('kind', '=', 'fanout.decided')
    .orderBy('position')
    .execute()
  const decisionOf = new Map(decisions.map((d) => [d.event_id!, d]))
  const atDecision = await endpointAtDecisions(trx, endpoint.id, decisions.map((d) => d.position))
  const catalog = await eventCatalogRead(trx, p.catalog, events.map((e) => e.type))

  const entries: LedgerEntry[] = []
  const base: DeliveryRow[] = []
  const mark = { since: p.since.toISOString(), until: p.until.toISOString() }
  for (const [i, event] of events.entries()) {
    const id = ids[i]!
    const delivery = liveById.get(id) ?? null
    const target = event.type === 'webhook.test' ? String(event.data['endpoint_id'] ?? '') : null
    const subscribed = target !== null ? target === endpoint.id : catalog.subscribes(endpoint.event_types, event.type)
    const visible = catalog.isWebhookVisible(event.type)
    // The port is asked fresh, as the fan-out does, and only where the scope needs it.
    const embedAdmits = visible && subscribed && requiresEmbedScope(event, endpoint.embed_id)
      ? await p.embedAdmits(endpoint.embed_id!, event, ctx.now)
      : null
    const decided = decisionOf.get(event.id)
    const verdict = recoverVerdict({
      endpoint_id: endpoint.id,
      event: { type: event.type, fanned_out: event.fanned_out_at !== null },
      visible,
      subscribed,
      scope: decideScope({ event, endpointEmbedId: endpoint.embed_id, embedAdmits }),
      delivery: delivery ? { state: delivery.state, retired: false } : retired.has(id) ? { retired: true } : null,
      decision: decided ? (decided.payload as unknown as FanoutVerdictInput) : null,
      at_decision: decided ? (atDecision.get(decided.position) ?? null) : null,
    })
    if (verdict.action === 'skip') skipped[verdict.reason] += 1
    else if (verdict.action === 'none') {
      if (verdict.reason === 'delivered') result.already_delivered += 1
      else result.in_flight += 1
    } else {
      result.recovered.push({ event_id: event.id, type: event.type, published_at: event.published_at, delivery_id: id, action: verdict.action, missed: verdict.missed })
      if (delivery) base.push(delivery)
      entries.push(
        recoverEntry(
          {
            owner_id: ctx.owner_id,
            endpoint,
            event,
            ...(delivery ? { discarded: { id, run: delivery.run, attempts: delivery.attempts } } : {}),
            recovered: { ...mark, missed: verdict.missed },
          },
          ctx,
        ),
      )
    }
  }
  if (!p.dry_run && entries.length > 0) {
    // The endpoint is held `for update`: no fan-out or claim can add a delivery of it meanwhile.
    await ledgerWrite(trx, { base: { deliveries: base }, entries, notify: { channel: 'deliveries' } })
  }
  return result
}

/**
 * The endpoint as it was at each of `positions` (its own entries folded up to there; null:
 * it did not exist yet), from one read of its entries.
 */
async function endpointAtDecisions(trx: Trx, endpointId: string, positions: readonly string[]): Promise<Map<string, EndpointRow | null>> {
  const out = new Map<string, EndpointRow | null>()
  if (positions.length === 0) return out
  const sorted = [...positions].sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0))
  const last = sorted[sorted.length - 1]!
  const history = await trx
    .selectFrom('ledger')
    .select(LEDGER_RECORD_COLUMNS)
    .where('endpoint_id', '=', endpointId)
    .where('delivery_id', 'is', null)
    .where('position', '<', last)
    .orderBy('position')
    .$castTo<LedgerRecord>()
    .execute()
  let row: EndpointRow | null = null
  let h = 0
  for (const at of sorted) {
    while (h < history.length && BigInt(history[h]!.position) < BigInt(at)) row = evolveEndpoint(row, history[h++]!)
    out.set(at, row)
  }
  return out
}

/**
 * Events of the owner published in the window that were pruned (past the event retention):
 * read from their `event.pruned` entries only when the window reaches before the retention's
 * horizon, since no index serves that read (it walks the ledger).
 */
async function prunedInWindow(trx: Trx, ctx: CommandContext, p: RecoverParams): Promise<number> {
  const horizon = new Date(ctx.now.getTime() - p.retentionMs)
  if (p.since >= horizon) return 0
  const { rows } = await sql<{ n: string }>`
    select count(*)::text as n from ledger
    where kind = 'event.pruned' and owner_id = ${ctx.owner_id}
      and (payload ->> 'published_at')::timestamptz >= ${p.since} and (payload ->> 'published_at')::timestamptz < ${p.until}
  `.execute(trx)
  return Number(rows[0]!.n)
}
