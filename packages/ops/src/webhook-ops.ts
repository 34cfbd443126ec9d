import { randomUUID } from 'node:crypto'
import { z } from 'zod'
import {
  checkEndpointUrl,
  generateV1aKeyPair,
  generateWebhookSecret,
  isValidGlob,
  secretKeyId,
  signsV1a,
  type SealedV1aKey,
  type SecretBox,
} from '@hookledger/core'
import {
  attemptList,
  deliveryFromLedger,
  deliveryGet,
  deliveryList,
  endpointCreate,
  endpointQuotaCheck,
  endpointDelete,
  endpointGet,
  endpointList,
  endpointLock,
  endpointRedeliver,
  endpointRotateSecret,
  endpointUpdate,
  InvalidCursorError,
  testEventSend,
} from '@hookledger/store'
import { OpError, notFound } from './op-error.js'
import { defineOp, ok, type OpContext } from './operation.js'
import { endpointGlobsCheck } from './endpoint-globs.js'
import { deliveryViews } from './waiting-view.js'
import { endpointHeadersInput, followRedirectsSchema, orderingSchema, rateLimitInput, sealEndpointHeaders } from './endpoint-options.js'
import { endpointMtlsInput, endpointOauth2Input, sealEndpointAuth } from './endpoint-auth-options.js'
import { attemptExchanges } from './attempt-exchange-view.js'
import {
  attemptSchema,
  attemptView,
  cursorParam,
  deliverySchema,
  deliveryStateSchema,
  deliveryView,
  endpointSchema,
  endpointView,
  limitParam,
  pageOf,
  publicKeySchema,
  signatureSchemeSchema,
  uuidParam,
} from './schemas.js'

const ownerCtx = (ctx: OpContext) => ({
  owner_id: ctx.principal.owner_id,
  now: ctx.deps.clock.now(),
  actor: ctx.actor,
})

/** Turns a bad cursor into a 400 naming the field. */
export async function paged<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch (err) {
    // A crafted cursor can decode to a timestamp PostgreSQL refuses (22007/22008).
    const pgCode = (err as { code?: unknown }).code
    if (err instanceof InvalidCursorError || pgCode === '22007' || pgCode === '22008') {
      throw new OpError('invalid_input', 'cursor: is not valid', 'cursor')
    }
    throw err
  }
}

export const eventTypesGlobs = z
  .array(z.string().min(1).max(200).refine(isValidGlob, 'not a valid event type glob'))
  .min(1)
  .max(64)

/**
 * Refuses URLs the egress guard would block and new globs that match no webhook-visible type
 * of the catalog (endpoint-globs.ts); `endpointId`: an update, whose current globs are kept.
 */
export async function checkEndpointInput(
  ctx: OpContext,
  input: { url?: string | undefined; event_types?: readonly string[] | undefined },
  endpointId?: string,
) {
  if (input.url !== undefined) {
    const problem = checkEndpointUrl(input.url, ctx.deps.egressPolicy)
    if (problem) throw new OpError(problem.code, problem.message, 'url')
  }
  await endpointGlobsCheck(ctx, input.event_types, endpointId)
}

export const endpointUrl = z.string().min(1).max(2048)

/** A fresh v1a key pair, its `whsk_` key sealed at once: the clear key never leaves this call. */
function freshV1aKey(box: SecretBox): SealedV1aKey {
  const pair = generateV1aKeyPair()
  return { sealed: box.seal(pair.secretKey), public_key: pair.publicKey }
}
export const embedId = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9_.:-]+$/, 'only letters, digits and _ . : -')

export const webhooksCreate = defineOp({
  name: 'webhooks.create',
  summary: 'Create an endpoint; the secret is in this answer only',
  scope: 'admin',
  http: { method: 'POST', path: '/api/admin/webhooks' },
  statuses: [201],
  input: z.strictObject({
    url: endpointUrl,
    description: z.string().max(1000).default(''),
    event_types: eventTypesGlobs,
    embed_id: embedId.nullable().default(null),
    signature_scheme: signatureSchemeSchema.default('v1'),
    headers: endpointHeadersInput.default({}),
    follow_redirects: followRedirectsSchema.default('same_origin'),
    rate_limit: rateLimitInput.default(null),
    ordering: orderingSchema.default('none'),
    mtls: endpointMtlsInput.default(null),
    oauth2: endpointOauth2Input.default(null),
  }),
  output: z.object({ endpoint: endpointSchema, secret: z.string() }),
  async handler(ctx, input) {
    await checkEndpointInput(ctx, input)
    const headers = sealEndpointHeaders(ctx.deps.secretBox, input.headers, null)
    const auth = sealEndpointAuth(ctx.deps, ctx.deps.clock.now(), input, null, input.url)
    const secret = generateWebhookSecret()
    const row = await ctx.deps.db.transaction().execute(async (trx) => {
      // The owner's max_endpoints (owners, migration 0009), counted in this transaction.
      const overQuota = await endpointQuotaCheck(trx, ctx.principal.owner_id)
      if (overQuota !== null) throw new OpError('endpoint_limit_reached', overQuota)
      return endpointCreate(trx, ownerCtx(ctx), {
        url: input.url,
        description: input.description,
        event_types: input.event_types,
        embed_id: input.embed_id,
        secret_sealed: ctx.deps.secretBox.seal(secret),
        secret_key_id: secretKeyId(secret),
        signature_scheme: input.signature_scheme,
        v1a_key: signsV1a(input.signature_scheme) ? freshV1aKey(ctx.deps.secretBox) : null,
        headers,
        follow_redirects: input.follow_redirects,
        rate_limit: input.rate_limit,
        ordering: input.ordering,
        ...auth,
      })
    })
    return { status: 201, body: { endpoint: endpointView(row), secret }, location: `/api/admin/webhooks/${row.id}` }
  },
})

export const webhooksList = defineOp({
  name: 'webhooks.list',
  summary: "List the owner's endpoints",
  scope: 'admin',
  http: { method: 'GET', path: '/api/admin/webhooks' },
  input: z.strictObject({ limit: limitParam, cursor: cursorParam }),
  output: pageOf(endpointSchema),
  async handler(ctx, input) {
    const page = await paged(() => endpointList(ctx.deps.db, ctx.principal.owner_id, input))
    return ok({ data: page.data.map(endpointView), next_cursor: page.next_cursor })
  },
})

export const webhooksGet = defineOp({
  name: 'webhooks.get',
  summary: 'Read one endpoint',
  scope: 'admin',
  http: { method: 'GET', path: '/api/admin/webhooks/:id' },
  input: z.strictObject({ id: uuidParam }),
  output: endpointSchema,
  async handler(ctx, input) {
    const row = await endpointGet(ctx.deps.db, ctx.principal.owner_id, input.id)
    if (!row) throw notFound('endpoint')
    return ok(endpointView(row))
  },
})

export const webhooksDeliveries = defineOp({
  name: 'webhooks.deliveries',
  summary: "An endpoint's deliveries, newest first; filter by state",
  scope: 'admin',
  http: { method: 'GET', path: '/api/admin/webhooks/:id/deliveries' },
  input: z.strictObject({
    id: uuidParam,
    state: deliveryStateSchema.optional(),
    limit: limitParam,
    cursor: cursorParam,
  }),
  output: pageOf(deliverySchema),
  async handler(ctx, input) {
    const owner = ctx.principal.owner_id
    if (!(await endpointGet(ctx.deps.db, owner, input.id))) throw notFound('endpoint')
    const page = await paged(() => deliveryList(ctx.deps.db, owner, input.id, input))
    return ok({ data: await deliveryViews(ctx, page.data), next_cursor: page.next_cursor })
  },
})

export const webhooksAttempts = defineOp({
  name: 'webhooks.attempts',
  summary: 'Every attempt of one delivery, across its runs, from the ledger',
  scope: 'admin',
  http: { method: 'GET', path: '/api/admin/deliveries/:id/attempts' },
  input: z.strictObject({ id: uuidParam }),
  output: z.object({
    delivery: deliverySchema,
    /** True when the delivery has left the `deliveries` table (delivery retention): read from the ledger. */
    retired: z.boolean(),
    runs: z.array(
      z.object({
        run: z.number().int(),
        started_at: z.string(),
        actor: z.string(),
        previous_attempts: z.number().int().nullable(),
      }),
    ),
    data: z.array(attemptSchema),
  }),
  async handler(ctx, input) {
    const owner = ctx.principal.owner_id
    const live = await deliveryGet(ctx.deps.db, owner, input.id)
    // A retired delivery (past the delivery retention) is read from its ledger entries: the
    // row as it was when it left.
    const delivery = live ?? (await deliveryFromLedger(ctx.deps.db, owner, input.id))
    // A deleted endpoint's deliveries read as missing too (the operator ledger keeps them).
    const endpoint = delivery ? await endpointGet(ctx.deps.db, owner, delivery.endpoint_id) : null
    if (!delivery || !endpoint) throw notFound('delivery')
    const { attempts, runs } = await attemptList(ctx.deps.db, owner, input.id)
    const exchanges = await attemptExchanges(ctx.deps, owner, endpoint, delivery, attempts)
    return ok({
      delivery: (await deliveryViews(ctx, [delivery]))[0]!,
      retired: live === null,
      runs: runs.map((r) => ({ ...r, started_at: r.started_at.toISOString() })),
      data: attempts.map((a, i) => attemptView(a, exchanges[i]!)),
    })
  },
})

export const webhooksUpdate = defineOp({
  name: 'webhooks.update',
  summary:
    'Change an endpoint; `enabled: false` switches it off, `enabled: true` back on and clears its failure state',
  scope: 'admin',
  http: { method: 'PATCH', path: '/api/admin/webhooks/:id' },
  input: z.strictObject({
    id: uuidParam,
    url: endpointUrl.optional(),
    description: z.string().max(1000).optional(),
    event_types: eventTypesGlobs.optional(),
    embed_id: embedId.nullable().optional(),
    enabled: z.boolean().optional(),
    signature_scheme: signatureSchemeSchema.optional(),
    headers: endpointHeadersInput.optional(),
    follow_redirects: followRedirectsSchema.optional(),
    rate_limit: rateLimitInput.optional(),
    ordering: orderingSchema.optional(),
    mtls: endpointMtlsInput.optional(),
    oauth2: endpointOauth2Input.optional(),
  }),
  output: endpointSchema,
  async handler(ctx, { id, headers, mtls, oauth2, ...patch }) {
    await checkEndpointInput(ctx, patch, id)
    // Offered in case the endpoint has no key pair yet; the decider keeps an existing one.
    const fresh =
      patch.signature_scheme !== undefined && signsV1a(patch.signature_scheme)
        ? { fresh_v1a_key: freshV1aKey(ctx.deps.secretBox) }
        : {}
    // Headers are checked against the endpoint as locked: `{ secret: true }` keeps its value.
    const row = await ctx.deps.db.transaction().execute((trx) =>
      endpointUpdate(trx, ownerCtx(ctx), id, (current) => ({
        ...patch,
        ...fresh,
        ...(headers !== undefined && { headers: sealEndpointHeaders(ctx.deps.secretBox, headers, current) }),
        // Without a new private key / client secret, the one held is kept (checked against the rest).
        ...sealEndpointAuth(ctx.deps, ctx.deps.clock.now(), { mtls, oauth2 }, current, patch.url ?? current.url),
      })),
    )
    if (!row) throw notFound('endpoint')
    return ok(endpointView(row))
  },
})

export const webhooksDelete = defineOp({
  name: 'webhooks.delete',
  summary: 'Delete an endpoint; its waiting deliveries are discarded (endpoint_deleted)',
  scope: 'admin',
  http: { method: 'DELETE', path: '/api/admin/webhooks/:id' },
  input: z.strictObject({ id: uuidParam }),
  output: z.object({ id: z.string(), deleted: z.literal(true), discarded: z.number().int() }),
  async handler(ctx, input) {
    const res = await ctx.deps.db
      .transaction()
      .execute((trx) => endpointDelete(trx, ownerCtx(ctx), input.id))
    if (!res) throw notFound('endpoint')
    return ok({ id: input.id, deleted: true as const, discarded: res.discarded })
  },
})

export const webhooksRotateSecret = defineOp({
  name: 'webhooks.rotate_secret',
  summary:
    'A new secret, shown in this answer only, and a new v1a key pair if the endpoint has one; the previous ones keep signing for the grace window (until previous_secret_expires_at). While a previous secret still signs, another rotation is refused (409) unless expire_previous is true',
  scope: 'admin',
  http: { method: 'POST', path: '/api/admin/webhooks/:id/rotate_secret' },
  input: z.strictObject({ id: uuidParam, expire_previous: z.boolean().optional() }),
  output: z.object({ secret: z.string(), public_key: publicKeySchema, previous_secret_expires_at: z.string().nullable() }),
  async handler(ctx, input) {
    const secret = generateWebhookSecret()
    const result = await ctx.deps.db.transaction().execute((trx) =>
      endpointRotateSecret(
        trx,
        ownerCtx(ctx),
        input.id,
        {
          secret_sealed: ctx.deps.secretBox.seal(secret),
          secret_key_id: secretKeyId(secret),
          // Used only if the endpoint has a key pair (known once its row is locked).
          v1a_key: freshV1aKey(ctx.deps.secretBox),
          graceMs: ctx.deps.rotationGraceMs,
        },
        { expirePrevious: input.expire_previous ?? false },
      ),
    )
    if (!result) throw notFound('endpoint')
    if ('blockedUntil' in result) {
      throw new OpError('rotation_in_grace',
        `the previous secret still signs until ${result.blockedUntil.toISOString()}: rotating now would drop it at once; rotate after that, or pass expire_previous: true to drop it now`,
        'expire_previous',
      )
    }
    return ok({ secret, public_key: result.v1a_public_key, previous_secret_expires_at: result.prev_secret_expires_at?.toISOString() ?? null })
  },
})

/** The one event type `send_test` publishes; the fan-out sends it only to the endpoint it names. */
export const WEBHOOK_TEST_TYPE = 'webhook.test'

const endpointDisabled = () =>
  new OpError('endpoint_disabled',
    'the endpoint is disabled; switch it on with enabled: true first',
  )

export const webhooksSendTest = defineOp({
  name: 'webhooks.send_test',
  summary: 'Publish a `webhook.test` event delivered to this endpoint only',
  scope: 'admin',
  http: { method: 'POST', path: '/api/admin/webhooks/:id/send_test' },
  statuses: [202],
  input: z.strictObject({ id: uuidParam }),
  output: z.object({ event_id: z.string(), delivery_id: z.string() }),
  async handler(ctx, input) {
    const c = ownerCtx(ctx)
    const sent = await ctx.deps.db.transaction().execute(async (trx) => {
      const endpoint = await endpointLock(trx, c, input.id)
      if (!endpoint) throw notFound('endpoint')
      if (!endpoint.enabled) throw endpointDisabled()
      return testEventSend(trx, c, endpoint, {
        id: `evt_${randomUUID().replaceAll('-', '')}`,
        type: WEBHOOK_TEST_TYPE,
        subject: `webhook://endpoints/${endpoint.id}`,
        occurred_at: c.now,
        data: { endpoint_id: endpoint.id },
      })
    })
    return { status: 202, body: sent }
  },
})

export const webhooksRedeliver = defineOp({
  name: 'webhooks.redeliver',
  summary:
    'Re-send every discarded delivery of this endpoint whose event still exists, with a fresh attempt budget',
  scope: 'admin',
  http: { method: 'POST', path: '/api/admin/webhooks/:id/redeliver' },
  input: z.strictObject({ id: uuidParam }),
  output: z.object({ requeued: z.number().int(), skipped: z.number().int() }),
  async handler(ctx, input) {
    const c = ownerCtx(ctx)
    const res = await ctx.deps.db.transaction().execute(async (trx) => {
      // Checked first: re-enqueued deliveries of a disabled endpoint would be discarded again.
      const endpoint = await endpointLock(trx, c, input.id)
      if (endpoint && !endpoint.enabled) throw endpointDisabled()
      return endpointRedeliver(trx, c, input.id)
    })
    if (!res) throw notFound('endpoint')
    return ok(res)
  },
})
