import { sql } from 'kysely'
import {
  catalogWithDeclared,
  decideScope,
  fanoutEntries,
  isRawSubject,
  type EndpointRow,
  type DeclaredEventType,
  type EventCatalog,
  type LedgerEntry,
} from '@hookledger/core'
import type { Db } from '../database/database.js'
import { transactionIdleLimitSql } from '../database/transaction-idle-limit.js'
import { claimInTransaction, type DeliveryClaimParams, type DeliveryClaimResult } from './delivery-claim.js'
import type { ClaimedDelivery, ThinEvent } from './delivery-heads.js'
import { ledgerWrite } from '../ledger-write.js'
import { channelSql } from '../event-publish.js'
import { EVENT_TYPE_COLUMNS } from '../event-types.js'

/**
 * Port: may this embed's endpoint see this event? Asked once per event and endpoint, never
 * cached, because an access code can be revoked or re-scoped at any moment.
 */
export type EmbedAdmits = (
  embedId: string,
  event: ThinEvent & { owner_id: string },
  now: Date,
) => Promise<boolean>

/**
 * The catalog the fan-out starts from (the built-ins): the declared types (`event_types`) are
 * read in its own transaction and laid over it, so it decides on the catalog the publisher
 * checked. The object may carry `internalDecided`, told after each committed batch how many
 * events of each internal type it decided (none delivered): the composition root counts them
 * (hookledger_events_internal_total) without the dispatcher having to know.
 */
export interface FanoutCatalog extends EventCatalog {
  readonly internalDecided?: (counts: ReadonlyMap<string, number>) => void
}

/** `catalog` with `internalDecided` set. */
export function fanoutCatalogObserved(catalog: EventCatalog, internalDecided: (counts: ReadonlyMap<string, number>) => void): FanoutCatalog {
  return Object.freeze({ ...catalog, internalDecided })
}

export interface FanoutParams {
  readonly now: Date
  readonly catalog: FanoutCatalog
  readonly embedAdmits: EmbedAdmits
  readonly actor: string
  /** Events per transaction. */
  readonly limit?: number
  /**
   * Whether this batch gives the oldest event its own batch once it has waited
   * `FANOUT_OLDEST_AFTER_MS` and the cost order passes it over (default true). A caller
   * alternates: after a batch that did (`agedAlone`), the next goes by cost, so the cheap events
   * wait for at most one expensive batch.
   */
  readonly agedFirst?: boolean
  /**
   * Asked once the batch's deliveries are decided, before they are written (a batch that
   * enqueues none does not ask): whether to claim in the same transaction, and into how many
   * free slots (null: not now; the write then sends its NOTIFY as before). A delivery to an idle endpoint is then leased by the
   * transaction that created it, without waiting for the producer's next pass and its own
   * transaction: publish → POST is one transaction shorter. The claim is the producer's own
   * (fair share, limits, at most one per endpoint, skip-locked), so a claim running beside it
   * passes over what it holds.
   */
  readonly claim?: () => Omit<DeliveryClaimParams, 'now' | 'actor'> | null
}

/** What a fan-out transaction did. */
export interface FanoutRunResult {
  readonly events: number
  readonly enqueued: number
  /** Events of types the catalog keeps internal (counted, never delivered). */
  readonly internal: number
  /** More events were waiting. */
  readonly more: boolean
  /** The batch was the oldest event alone, which the cost order had passed over (`FanoutParams.agedFirst`). */
  readonly agedAlone: boolean
  /** Deliveries were enqueued that its claim did not lease: a producer may claim them (NOTIFY sent). */
  readonly left: boolean
  /** Deliveries its claim leased (`FanoutParams.claim`), the caller's to send. */
  readonly claimed: readonly ClaimedDelivery[]
  /** The claim's ledger entries, its timing, and who it left waiting (as `deliveryClaim` says). */
  readonly claim: (Pick<DeliveryClaimResult, 'entries' | 'settled' | 'ownersWaiting' | 'endpointsWaiting'> & { readonly ms: number }) | null
}

interface EventRow extends ThinEvent {
  owner_id: string
}

/** An event to fan out, and its type's declared row when it has one (`t_name` null otherwise). */
type EventWithDeclared = EventRow & { more: boolean; aged_alone: boolean } & { [K in keyof DeclaredEventType as `t_${K}`]: DeclaredEventType[K] | null }

/** The declared rows among the joined ones, once each. */
function declaredOf(rows: readonly EventWithDeclared[]): DeclaredEventType[] {
  const byName = new Map<string, DeclaredEventType>()
  for (const r of rows) {
    if (r.t_name === null || byName.has(r.t_name)) continue
    byName.set(r.t_name, {
      name: r.t_name, description: r.t_description!, exposure: r.t_exposure!, group: r.t_group!, schema: r.t_schema,
      deprecated_at: r.t_deprecated_at, deprecation_reason: r.t_deprecation_reason, sunset_at: r.t_sunset_at,
      declared_at: r.t_declared_at!, updated_at: r.t_updated_at!,
    })
  }
  return [...byName.values()]
}

/** A fan-out transaction takes events until their owners' endpoints add up to this (at least one event). */
export const FANOUT_DELIVERIES_CAP = 1_000

/**
 * The oldest waiting event, once it has waited this long, gets a batch of its own whatever it
 * costs (in every other batch: `FanoutParams.agedFirst`). By cost alone an event to thousands
 * of endpoints waited while any cheaper event did: under a steady stream of them it could wait
 * forever (`npm run bench -- --only=fairness-owners`: a flood's 100 events not fanned out in 10
 * minutes beside 2,000 owners' 20 events/s).
 */
export const FANOUT_OLDEST_AFTER_MS = 2_000

/**
 * The next fan-out batch, owner by owner (issue 24): the owners with events waiting are walked
 * through `events (owner_id, published_at, id) where fanned_out_at is null` (migration 0010),
 * and their oldest events are taken in turn by cost — each event at its owner's running total of
 * deliveries (its enabled endpoints) — so one owner's thousands of events, or a few events to
 * thousands of endpoints, never queue another's behind them. Events are taken while
 * their owners' enabled endpoints (what each can fan out to) add up to `cap`, at least one, so a
 * transaction stays short when one event goes to thousands of endpoints. The oldest event of
 * all, once published before `agedBefore` (`FANOUT_OLDEST_AFTER_MS`), if the cost order passes it
 * over, is the batch alone (`aged_alone`): mixed in, an event to 2,000 endpoints made every cheap
 * event of its batch wait for its 2,000 deliveries (`fairness`: the quiet owner's p99 while a
 * flood was fanned out went from 286–424 to 831–853 ms). Locked `skip locked` (fan-outs run side
 * by side); `more`: events were left for the next batch.
 */
function fairFanoutBatch(limit: number, cap: number, agedBefore: Date | null) {
  return sql`
    with recursive walk(owner_id) as (
      (select e.owner_id from events e where e.fanned_out_at is null order by e.owner_id limit 1)
      union all
      select (select e.owner_id from events e where e.fanned_out_at is null and e.owner_id > w.owner_id order by e.owner_id limit 1)
      from walk w where w.owner_id is not null
    ),
    owners as (
      select w.owner_id, greatest(1, (select count(*) from endpoints p where p.owner_id = w.owner_id and p.enabled and p.deleted_at is null)) as fan
      from walk w where w.owner_id is not null
    ),
    candidates as (
      select c.owner_id, c.id, c.published_at, c.rn, o.fan from owners o
      cross join lateral (
        select e.owner_id, e.id, e.published_at, row_number() over (order by e.published_at, e.id) as rn
        from events e where e.owner_id = o.owner_id and e.fanned_out_at is null
        order by e.published_at, e.id limit ${limit}
      ) c
    ),
    -- Owners take turns by what they cost (deliveries), not by events: each event is placed at
    -- its owner's running total, so a quiet owner's fifty one-delivery events go before a flood's
    -- second event to two thousand endpoints.
    costed as (
      select c.*, sum(c.fan) over (partition by c.owner_id order by c.rn) as owner_cost from candidates c
    ),
    ordered as (
      select c.owner_id, c.id, c.published_at, row_number() over (order by c.owner_cost, c.published_at, c.id) as k,
             sum(c.fan) over (order by c.owner_cost, c.published_at, c.id) as cum, count(*) over () as waiting,
             -- The oldest of all (each owner's oldest is among its candidates).
             row_number() over (order by c.published_at, c.id) as age
      from costed c
    ),
    by_cost as (
      select o.owner_id, o.id, o.waiting, o.age, o.published_at, (o.k = 1 or (o.cum <= ${cap} and o.k <= ${limit})) as taken
      from ordered o
    ),
    -- Locked here: one another fan-out holds (or has just fanned out) is left to it, and this
    -- batch goes by cost.
    aged as (
      select b.owner_id, b.id, b.waiting from by_cost b
      join events x on x.owner_id = b.owner_id and x.id = b.id
      where b.age = 1 and b.published_at <= ${agedBefore} and not b.taken and x.fanned_out_at is null
      for update of x skip locked
    ),
    picked as (
      select a.owner_id, a.id, a.waiting, true as aged_alone from aged a
      union all
      select b.owner_id, b.id, b.waiting, false from by_cost b where b.taken and not exists (select 1 from aged)
    )
    select e.owner_id, e.id, e.type, e.subject, e.occurred_at, e.data, e.published_at,
           (select count(*) from picked) < p.waiting as more, p.aged_alone
    from events e join picked p on p.owner_id = e.owner_id and p.id = e.id
    where e.fanned_out_at is null
    for update of e skip locked
  `
}

/**
 * Fans out up to `limit` new events, each in the same transaction as its deliveries: for each
 * event, one delivery per enabled endpoint of the owner whose globs match and whose scope
 * admits it (`webhook.test` only to the endpoint it names), unique on (endpoint, event), and a
 * `fanout.decided` entry naming what matched and what scope denied. Returns the number of
 * events handled and deliveries enqueued.
 */
export async function fanoutRun(db: Db, params: FanoutParams): Promise<FanoutRunResult> {
  const { now, actor } = params
  const internal = new Map<string, number>()
  const result = await db.transaction().execute(async (trx) => {
    // Its commit does not wait for the WAL flush: a fan-out lost in a crash (or a failover) is
    // one nobody acted on, and it is made again from its event, which was committed durably.
    // Whatever acts on it (a claim, a checkpoint covering its entries) commits durably later,
    // and a flush writes all WAL before it, this transaction's included (docs/contract.md §8).
    // (Set for this transaction by the batch's statement, with its idle limit: no round trip of its own.)
    // The batch and the declared rows of its types in one statement (no round trip of its own
    // for the catalog): the catalog the publisher checked, as this transaction sees it.
    const joined = (
      await sql<EventWithDeclared>`
        with batch as materialized (${fairFanoutBatch(params.limit ?? 50, FANOUT_DELIVERIES_CAP, params.agedFirst === false ? null : new Date(now.getTime() - FANOUT_OLDEST_AFTER_MS))})
        select b.owner_id, b.id, b.type, b.subject, b.occurred_at, b.data, b.more, b.aged_alone,
               t.name as t_name, t.description as t_description, t.exposure as t_exposure, t."group" as t_group,
               t.schema as t_schema, t.deprecated_at as t_deprecated_at, t.deprecation_reason as t_deprecation_reason,
               t.sunset_at as t_sunset_at, t.declared_at as t_declared_at, t.updated_at as t_updated_at
        from (select set_config('synchronous_commit', 'off', true),
                     -- A cut-off worker's transaction ends on the server (transaction-idle-limit.ts).
                     ${transactionIdleLimitSql()}) settings, batch b
        left join lateral (select ${EVENT_TYPE_COLUMNS} from event_types where name = b.type) t on true
        order by b.published_at, b.id
      `.execute(trx)
    ).rows
    if (joined.length === 0) return { events: 0, enqueued: 0, more: false, agedAlone: false, left: false, claimed: [], claim: null }
    const events: EventRow[] = joined.map((r) => ({ owner_id: r.owner_id, id: r.id, type: r.type, subject: r.subject, occurred_at: r.occurred_at, data: r.data }))
    const catalog = catalogWithDeclared(params.catalog, declaredOf(joined))
    const owners = [...new Set(events.map((e) => e.owner_id))]
    const endpoints = (
      await sql<EndpointRow>`
        select * from endpoints where owner_id = any(${owners}::text[]) and enabled and deleted_at is null
        order by created_at, id
      `.execute(trx)
    ).rows
    // Each event looks only at its own owner's endpoints: a fan-out to N endpoints stays linear in N.
    const byOwner = new Map<string, EndpointRow[]>()
    for (const ep of endpoints) {
      const list = byOwner.get(ep.owner_id)
      if (list) list.push(ep)
      else byOwner.set(ep.owner_id, [ep])
    }
    const entries: LedgerEntry[] = []
    for (const event of events) {
      const matched: EndpointRow[] = []
      const denied: { endpoint_id: string; reason: string }[] = []
      const visible = catalog.isWebhookVisible(event.type)
      if (!visible) internal.set(event.type, (internal.get(event.type) ?? 0) + 1)
      const target = event.type === 'webhook.test' ? String(event.data['endpoint_id'] ?? '') : null
      if (visible) {
        for (const ep of byOwner.get(event.owner_id) ?? []) {
          if (target !== null ? ep.id !== target : !catalog.subscribes(ep.event_types, event.type)) continue
          const needsEmbed = ep.embed_id !== null && event.type === 'corpus.note.changed' && !isRawSubject(event.subject)
          const embedAdmits = needsEmbed ? await params.embedAdmits(ep.embed_id!, event, now) : null
          const scope = decideScope({ event, endpointEmbedId: ep.embed_id, embedAdmits })
          if (scope.admitted) matched.push(ep)
          else denied.push({ endpoint_id: ep.id, reason: scope.reason })
        }
      }
      entries.push(...fanoutEntries({ event, matched, denied, visible }, { now, actor }))
    }
    // Whether this transaction claims too (the caller's free slots, asked before the write: its
    // NOTIFY then waits for the claim, and goes out only for what the claim left).
    const slots = entries.some((e) => e.kind === 'fanout.decided' && e.payload.matched.length > 0) ? (params.claim?.() ?? null) : null
    // A pair (endpoint, event) that already has a delivery keeps it (so the decision's enqueue
    // says: fanout-enqueues.ts). In the same statement: mark the events
    // fanned out, and NOTIFY (sent on commit) if anything was enqueued. Its queue merge takes
    // shared locks on the endpoints enqueued to first, so the queue heads it refreshes see any
    // claim or settle of theirs that committed first (endpoint-queue.ts).
    const written = await ledgerWrite(trx, {
      entries,
      existingDeliveries: 'keep',
      queueMerge: 'earliest',
      fannedOut: { events: events.map((e) => ({ owner_id: e.owner_id, id: e.id })), at: now },
      ...(slots ? {} : { notify: { channel: 'deliveries', when: 'deliveries_inserted' } as const }),
    })
    const inserted = written.insertedDeliveries
    const more = joined[0]!.more || joined.length >= (params.limit ?? 50)
    const done = { events: events.length, enqueued: inserted.size, more, agedAlone: joined[0]!.aged_alone }
    if (!slots || inserted.size === 0) return { ...done, left: inserted.size > 0, claimed: [], claim: null }
    const started = performance.now()
    const claim = await claimInTransaction(trx, { ...slots, now, actor, restoreDurableCommit: true })
    // An endpoint enqueued to that the claim did not take (busy, or past the free slots) waits
    // for a producer: theirs are told. One the claim took sends what follows in its own turn.
    const taken = new Set(claim.claimed.map((c) => c.endpoint.id))
    const left = [...inserted].some((id) => !taken.has(written.deliveries.get(id)!.endpoint_id))
    if (left) await sql`select pg_notify(${channelSql('deliveries')}, '')`.execute(trx)
    const { claimed, ...rest } = claim
    return { ...done, left, claimed, claim: { ...rest, ms: performance.now() - started } }
  })
  // Committed: only now is what it decided a fact to count.
  if (internal.size > 0) params.catalog.internalDecided?.(internal)
  return { ...result, internal: [...internal.values()].reduce((a, b) => a + b, 0) }
}
