import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import {
  DeliveryOutcome,
  bytesToBase64,
  decideDelivery,
  decideEndpointUpdate,
  decideSecretRotation,
  secretRotationBlockedUntil,
  iso,
  signsV1a,
  type DeliveryRow,
  type EndpointHeaderSet,
  type EndpointMtls,
  type EndpointOrdering,
  type EndpointRateLimit,
  type EndpointOauth2,
  type EndpointPatch,
  type EndpointRow,
  type FollowRedirects,
  type LedgerEntry,
  type RotationKeys,
  type SealedV1aKey,
  type SignatureScheme,
} from '@hookledger/core'
import type { Trx } from './database/database.js'
import { limitTransactionIdle } from './database/transaction-idle-limit.js'
import { DELIVERY_ROW_COLUMNS } from './delivery/delivery-row-sql.js'
import { ledgerWrite } from './ledger-write.js'
import { channelSql } from './event-publish.js'

/** Who and when, for every owner command. */
export interface CommandContext {
  readonly owner_id: string
  readonly now: Date
  readonly actor: string
}

/** The common fields of an entry about one endpoint, made by an owner command. */
const endpointEntryBase = (ctx: CommandContext, endpointId: string) => ({
  occurred_at: ctx.now,
  owner_id: ctx.owner_id,
  endpoint_id: endpointId,
  delivery_id: null,
  event_id: null,
  actor: ctx.actor,
})

/**
 * Locks and returns a live (not deleted) endpoint of this owner, or null. The owner's command
 * holds the endpoint against the delivery cycle's settles from here, so its transaction gets the
 * same idle limit as theirs (transaction-idle-limit.ts): an API process cut off mid-command does
 * not hold the endpoint until TCP keepalives notice.
 */
export async function endpointLock(trx: Trx, ctx: CommandContext, id: string): Promise<EndpointRow | null> {
  await limitTransactionIdle(trx)
  const rows = await sql<EndpointRow>`
    select * from endpoints where id = ${id}::uuid and owner_id = ${ctx.owner_id} and deleted_at is null for update
  `.execute(trx)
  return rows.rows[0] ?? null
}

export interface EndpointCreateInput {
  readonly url: string
  readonly description: string
  readonly event_types: readonly string[]
  readonly embed_id: string | null
  readonly secret_sealed: Uint8Array
  readonly secret_key_id: string
  /** Default `v1`. A scheme with v1a needs `v1a_key`. */
  readonly signature_scheme?: SignatureScheme
  readonly v1a_key?: SealedV1aKey | null
  /** Custom headers, secret values already sealed; default none. */
  readonly headers?: EndpointHeaderSet
  /** Default `same_origin`. */
  readonly follow_redirects?: FollowRedirects
  /** Default none, `none`. */
  readonly rate_limit?: EndpointRateLimit | null
  readonly ordering?: EndpointOrdering
  /** Client authentication, secret parts already sealed; default none. */
  readonly mtls?: EndpointMtls | null
  readonly oauth2?: EndpointOauth2 | null
}

/** `webhooks.create`: appends `endpoint.created` and inserts the row. */
export async function endpointCreate(trx: Trx, ctx: CommandContext, input: EndpointCreateInput): Promise<EndpointRow> {
  const id = randomUUID()
  const scheme = input.signature_scheme ?? 'v1'
  const v1aKey = input.v1a_key ?? null
  if (signsV1a(scheme) && v1aKey === null) throw new Error(`scheme ${scheme} needs a v1a key pair`)
  const { endpoints } = await ledgerWrite(trx, { base: {}, entries: [
    {
      kind: 'endpoint.created',
      ...endpointEntryBase(ctx, id),
      payload: {
        url: input.url,
        description: input.description,
        event_types: [...input.event_types],
        embed_id: input.embed_id,
        secret_sealed: bytesToBase64(input.secret_sealed),
        secret_key_id: input.secret_key_id,
        signature_scheme: scheme,
        v1a_key_sealed: v1aKey ? bytesToBase64(v1aKey.sealed) : null,
        v1a_public_key: v1aKey?.public_key ?? null,
        headers: { ...input.headers?.headers },
        secret_headers_sealed: { ...input.headers?.secret_headers_sealed },
        follow_redirects: input.follow_redirects ?? 'same_origin',
        rate_limit: input.rate_limit ?? null,
        ordering: input.ordering ?? 'none',
        mtls: input.mtls ?? null,
        oauth2: input.oauth2 ?? null,
      },
    },
  ] })
  return endpoints.get(id)!
}

/**
 * `webhooks.update`; returns null when the endpoint does not exist for this owner. The patch
 * may be made from the endpoint as locked (a kept secret header is its sealed value).
 */
export async function endpointUpdate(
  trx: Trx,
  ctx: CommandContext,
  id: string,
  patch: EndpointPatch | ((current: EndpointRow) => EndpointPatch),
): Promise<EndpointRow | null> {
  const row = await endpointLock(trx, ctx, id)
  if (!row) return null
  const entries = decideEndpointUpdate(row, typeof patch === 'function' ? patch(row) : patch, ctx.now, ctx.actor)
  if (entries.length === 0) return row
  const { endpoints } = await ledgerWrite(trx, { base: { endpoints: [row] }, entries })
  return endpoints.get(id) ?? row
}

/**
 * `webhooks.delete`: the endpoint is marked deleted and every delivery still waiting for it is
 * discarded (`endpoint_deleted`), each with its own ledger entry. A delivery in flight settles
 * normally (and, should it be retried, is discarded when next claimed). Returns null when there
 * is no such endpoint.
 *
 * Lock order is the claim's: the waiting deliveries first, then the endpoint row. Locking the
 * endpoint first deadlocks with a claim that holds this endpoint's head delivery and waits for
 * the endpoint row to decide the lease.
 */
export async function endpointDelete(
  trx: Trx,
  ctx: CommandContext,
  id: string,
): Promise<{ discarded: number } | null> {
  const exists = await trx
    .selectFrom('endpoints')
    .select('id')
    .where('id', '=', id)
    .where('owner_id', '=', ctx.owner_id)
    .where('deleted_at', 'is', null)
    .executeTakeFirst()
  if (!exists) return null
  const waiting = (
    await sql<DeliveryRow>`
      select ${DELIVERY_ROW_COLUMNS} from delivery_states s join delivery_origins o on o.id = s.id
      where s.endpoint_id = ${id}::uuid and s.next_attempt_at is not null and s.state in ('pending', 'retryable')
      order by s.id for update of s
    `.execute(trx)
  ).rows
  const row = await endpointLock(trx, ctx, id)
  if (!row) return null // deleted meanwhile by a concurrent delete
  const entries: LedgerEntry[] = [
    ...waiting.flatMap((d) => decideDelivery(d, DeliveryOutcome.discarded('endpoint_deleted'), ctx)),
    {
      kind: 'endpoint.deleted',
      ...endpointEntryBase(ctx, id),
      payload: {},
    },
  ]
  await ledgerWrite(trx, { base: { endpoints: [row], deliveries: waiting }, entries })
  return { discarded: waiting.length }
}

/**
 * `webhooks.rotate_secret`: the new sealed secret (and, for an endpoint with a v1a key pair, the
 * new pair) become current; the previous ones stay valid for `graceMs` (0 drops them at once),
 * during which requests carry both signatures.
 */
export async function endpointRotateSecret(
  trx: Trx,
  ctx: CommandContext,
  id: string,
  keys: RotationKeys,
  options: { expirePrevious?: boolean } = {},
): Promise<EndpointRow | { blockedUntil: Date } | null> {
  const row = await endpointLock(trx, ctx, id)
  if (!row) return null
  const blockedUntil = secretRotationBlockedUntil(row, ctx.now, options.expirePrevious ?? false)
  if (blockedUntil) return { blockedUntil }
  const entry = decideSecretRotation(row, keys, ctx.now, ctx.actor)
  const { endpoints } = await ledgerWrite(trx, { base: { endpoints: [row] }, entries: [entry] })
  return endpoints.get(id)!
}

/**
 * `webhooks.redeliver`: every discarded delivery of the endpoint whose event still exists gets
 * a new run with a fresh attempt budget, due now. The `delivery.redelivered` entry names the
 * previous run, so the attempt history links old and new attempts; the actor is recorded.
 */
export async function endpointRedeliver(
  trx: Trx,
  ctx: CommandContext,
  id: string,
): Promise<{ requeued: number; skipped: number } | null> {
  const row = await endpointLock(trx, ctx, id)
  if (!row) return null
  const discarded = (
    await sql<DeliveryRow & { has_event: boolean }>`
      select d.*, exists (select 1 from events e where e.owner_id = d.owner_id and e.id = d.event_id) as has_event
      from deliveries d where d.endpoint_id = ${id}::uuid and d.state = 'discarded'
      order by d.id for update of d
    `.execute(trx)
  ).rows
  const requeue = discarded.filter((d) => d.has_event).map(({ has_event: _, ...d }) => d as DeliveryRow)
  const entries: LedgerEntry[] = requeue.map((d) => ({
    kind: 'delivery.redelivered',
    occurred_at: ctx.now,
    owner_id: ctx.owner_id,
    endpoint_id: id,
    delivery_id: d.id,
    event_id: d.event_id,
    actor: ctx.actor,
    payload: { run: d.run + 1, next_attempt_at: iso(ctx.now), previous_run: d.run, previous_attempts: d.attempts },
  }))
  if (entries.length > 0) {
    await ledgerWrite(trx, { base: { deliveries: requeue }, entries })
    await sql`select pg_notify(${channelSql('deliveries')}, '')`.execute(trx)
  }
  return { requeued: requeue.length, skipped: discarded.length - requeue.length }
}
