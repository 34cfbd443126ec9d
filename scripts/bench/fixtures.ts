/**
 * What scenarios build their data and engine from: endpoints (through the store's writer, or in
 * bulk in SQL with their ledger entries), events through the publish path, a dispatcher and a
 * transport as the service makes them, and checks on the outcome.
 */
import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import {
  JOB_TIMEOUT_MS,
  deriveAttemptTimeouts,
  generateWebhookSecret,
  secretKeyId,
  systemClock,
  type EndpointRow,
} from '@hookledger/core'
import { createPgNotifier, endpointCreate, eventInsert, type Db } from '@hookledger/store'
import { ledgerReplayVerify } from '@hookledger/ledger'
import { Dispatcher, createHttpTransport, type DispatcherObserver } from '@hookledger/worker'
import type { Env } from './harness.js'
import { EVENT_TYPE, cfg } from './settings.js'
import { until } from './util.js'

/** Creates endpoints through the store's one writer (the `webhooks.create` path), 100 a transaction. */
export async function createEndpoints(
  env: Env,
  db: Db,
  specs: readonly { owner_id: string; url: string; event_types?: string[] }[],
): Promise<EndpointRow[]> {
  const out: EndpointRow[] = []
  for (let i = 0; i < specs.length; i += 100) {
    const chunk = specs.slice(i, i + 100)
    const rows = await db.transaction().execute(async (trx) => {
      const made: EndpointRow[] = []
      for (const s of chunk) {
        const secret = generateWebhookSecret()
        made.push(
          await endpointCreate(
            trx,
            { owner_id: s.owner_id, now: systemClock.now(), actor: 'owner:bench' },
            {
              url: s.url,
              description: 'bench',
              event_types: s.event_types ?? ['*'],
              embed_id: null,
              secret_sealed: env.secretBox.seal(secret),
              secret_key_id: secretKeyId(secret),
            },
          ),
        )
      }
      return made
    })
    out.push(...rows)
  }
  return out
}

/**
 * Creates `count` endpoints in SQL, 20,000 a transaction, each with the `endpoint.created`
 * entry `endpointCreate` would append (and `endpoint.deleted` for the first `deleted`), in the
 * same transaction: the projection guard is satisfied and replay derives the same rows. One
 * endpointCreate per row costs ~1 ms; 100,000 of them would dominate the run. They all share
 * one secret (nothing is sent to them). Owners cycle through `owners` (`owner_0`, …) when
 * given, else all are `owner`.
 */
export async function bulkCreateEndpoints(
  env: Env,
  db: Db,
  params: { count: number; deleted?: number; owner: string; owners?: number; url: string },
): Promise<void> {
  const secret = generateWebhookSecret()
  const sealed = Buffer.from(env.secretBox.seal(secret)).toString('base64')
  const keyId = secretKeyId(secret)
  const deleted = params.deleted ?? 0
  const chunk = 20_000
  for (let from = 0; from < params.count; from += chunk) {
    const to = Math.min(params.count, from + chunk) - 1
    const owner = params.owners
      ? sql`${params.owner}::text || '_' || (g % ${params.owners}::int)`
      : sql`${params.owner}::text`
    await db.transaction().execute(async (trx) => {
      // Written straight in SQL (a bulk load, entries and rows consistent): behind the write function.
      await sql`set local session_replication_role = replica`.execute(trx)
      await sql`
        create temp table bulk_ep on commit drop as
        select g, gen_random_uuid() as id, ${owner} as owner_id, date_trunc('milliseconds', clock_timestamp()) as at
        from generate_series(${from}::int, ${to}::int) g
      `.execute(trx)
      await sql`
        insert into ledger (occurred_at, owner_id, kind, endpoint_id, payload, actor)
        select at, owner_id, 'endpoint.created', id,
          jsonb_build_object('url', ${params.url}::text, 'description', 'bench idle', 'event_types', jsonb_build_array('*'),
            'embed_id', null, 'secret_sealed', ${sealed}::text, 'secret_key_id', ${keyId}::text), 'owner:bench'
        from bulk_ep order by g
      `.execute(trx)
      await sql`
        insert into endpoints (id, owner_id, url, description, event_types, embed_id, secret_sealed, secret_key_id,
          enabled, created_at, updated_at)
        select id, owner_id, ${params.url}::text, 'bench idle', '{*}', null, decode(${sealed}::text, 'base64'), ${keyId}::text,
          true, at, at
        from bulk_ep
      `.execute(trx)
      if (from < deleted) {
        await sql`
          insert into ledger (occurred_at, owner_id, kind, endpoint_id, payload, actor)
          select date_trunc('milliseconds', clock_timestamp()), owner_id, 'endpoint.deleted', id, '{}'::jsonb, 'owner:bench'
          from bulk_ep where g < ${deleted}::int order by g
        `.execute(trx)
        await sql`
          update endpoints e set deleted_at = l.occurred_at, updated_at = l.occurred_at
          from bulk_ep b join ledger l on l.endpoint_id = b.id and l.kind = 'endpoint.deleted' and l.tx_id = pg_current_xact_id()
          where e.id = b.id
        `.execute(trx)
      }
    })
  }
  await sql`vacuum analyze endpoints`.execute(db)
  // The load's dirty pages are written now, not by a checkpoint that lands in the measurement
  // (after which each page a claim first touches goes to the WAL whole).
  await sql`checkpoint`.execute(db)
}

/** An event id as `POST /api/events` makes one when the publisher sends none: `evt_` + 32 hex. */
export const eventId = () => `evt_${randomUUID().replaceAll('-', '')}`

/** Publishes one event through the store's publish path (the transactional outbox). */
export async function publish(db: Db, owner_id: string, id: string, type: string = EVENT_TYPE): Promise<void> {
  const now = systemClock.now()
  await db.transaction().execute((trx) =>
    eventInsert(trx, {
      owner_id,
      now,
      actor: 'system',
      event: { id, type, subject: `booking://${id}`, occurred_at: now, data: { booking_id: id } },
    }),
  )
}

/** One event for each owner named, in one transaction (a bench's many owners published quickly). */
export async function publishEach(db: Db, owners: readonly string[], type: string = EVENT_TYPE): Promise<void> {
  const now = systemClock.now()
  await db.transaction().execute(async (trx) => {
    for (const owner_id of owners) {
      const id = eventId()
      await eventInsert(trx, { owner_id, now, actor: 'system', event: { id, type, subject: `booking://${id}`, occurred_at: now, data: { booking_id: id } } })
    }
  })
}

export function newTransport(env: Env) {
  return createHttpTransport({ policy: env.policy })
}

export function newDispatcher(
  env: Env,
  db: Db,
  url: string,
  transport: ReturnType<typeof newTransport>,
  workerId: string,
  concurrency = cfg.concurrency,
  observer?: DispatcherObserver,
) {
  const notifier = createPgNotifier(url)
  // The service's timeouts (a lease of two attempts and the margin: the pipelined endpoint lease).
  const timeouts = deriveAttemptTimeouts({ jobTimeoutMs: JOB_TIMEOUT_MS })
  const dispatcher = new Dispatcher({
    db,
    clock: systemClock,
    jobTimeoutMs: timeouts.jobTimeoutMs,
    leaseMs: timeouts.leaseMs,
    transport,
    secretBox: env.secretBox,
    catalog: env.catalog,
    embedAdmits: async () => false,
    workerId,
    notifier,
    concurrency,
    ...(observer ? { observer } : {}),
  })
  return { dispatcher, notifier }
}

export async function countStates(db: Db): Promise<Record<string, number>> {
  const rows = (
    await sql<{ state: string; n: string }>`select state, count(*) as n from deliveries group by state`.execute(db)
  ).rows
  return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]))
}

export async function countCompleted(db: Db): Promise<number> {
  return Number(
    (await sql<{ n: string }>`select count(*) as n from deliveries where state = 'completed'`.execute(db)).rows[0]!.n,
  )
}

/** Waits until `total` deliveries are completed (settles are batched a few ms after the POST). */
export async function waitCompleted(db: Db, total: number, timeoutMs: number): Promise<void> {
  await until(`${total} completed deliveries`, timeoutMs, async () => ((await countCompleted(db)) >= total ? true : null))
}

/** Replay-verifies `db`; throws when the projections differ from what the ledger gives. */
export async function replayClean(db: Db, where: string): Promise<Awaited<ReturnType<typeof ledgerReplayVerify>>> {
  const report = await ledgerReplayVerify(db)
  if (report.differencesTotal > 0) {
    const first = report.differences[0]
    throw new Error(
      `${where}: ledgerReplayVerify found ${report.differencesTotal} differences (first: ${first ? `${first.table} ${first.key} ${first.kind} ${first.problem ?? first.columns.join(',')}` : '—'})`,
    )
  }
  return report
}
