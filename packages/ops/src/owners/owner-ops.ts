/**
 * Owners as first-class objects, operator scope (issue 24 item 2): list them with their usage,
 * read one, set its limits, suspend and resume it. Each change is a ledger entry
 * (store/owner-commands.ts); an owner without a row has the defaults (weight 1, no limits).
 */
import { z } from 'zod'
import { OWNER_ID_PATTERN, ownerLimitsPatchSchema, type OwnerRow } from '@hookledger/core'
import { CAPPED_USAGE, ownerLimitsSet, ownerResume, ownerSuspend, ownersPage, ownersWithUsage, type OwnerUsage } from '@hookledger/store'
import { notFound } from '../op-error.js'
import { defineOp, ok, type OpContext } from '../operation.js'
import { cursorParam, limitParam, pageOf } from '../schemas.js'
import { paged } from '../webhook-ops.js'

// As tokens and the CLI spell owner ids (so the operator owner `*` has no limits).
const ownerIdParam = z.string().regex(OWNER_ID_PATTERN, 'must be an owner id (lowercase letters, digits, _ and -, up to 63)')

const usageSchema = z.object({
  endpoints: z.number().int(),
  /** Deliveries waiting or running. */
  backlog: z.number().int(),
  deliveries_24h: z.number().int(),
  attempts_24h: z.number().int(),
  /**
   * The counts that are lower bounds: `owners.list` counts each owner's backlog and last day up
   * to 1,000 (a page costs its owners, not their traffic); `owners.get` counts exactly (empty).
   */
  at_least: z.array(z.enum(CAPPED_USAGE)),
})

export const ownerViewSchema = z.object({
  id: z.string(),
  weight: z.number().int(),
  publish_per_second: z.number().nullable(),
  publish_burst: z.number().int().nullable(),
  max_endpoints: z.number().int().nullable(),
  max_in_flight: z.number().int().nullable(),
  suspended: z.object({ at: z.string(), reason: z.string().nullable() }).nullable(),
  created_at: z.string().nullable(),
  updated_at: z.string().nullable(),
  usage: usageSchema,
})

function ownerView(owner: OwnerRow, usage: OwnerUsage): z.input<typeof ownerViewSchema> {
  return {
    id: owner.id,
    weight: owner.weight,
    publish_per_second: owner.publish_per_second,
    publish_burst: owner.publish_burst,
    max_endpoints: owner.max_endpoints,
    max_in_flight: owner.max_in_flight,
    suspended: owner.suspended_at === null ? null : { at: owner.suspended_at.toISOString(), reason: owner.suspended_reason },
    created_at: owner.created_at?.toISOString() ?? null,
    updated_at: owner.updated_at?.toISOString() ?? null,
    usage: { ...usage, at_least: [...usage.at_least] },
  }
}

async function ownerOne(ctx: OpContext, id: string) {
  const [found] = await ownersWithUsage(ctx.deps.db, ctx.deps.clock.now(), [id])
  // An owner is known by a row of its own, a token, an endpoint or a delivery; any other id is
  // not one (a change makes it one: an operator may set limits before the first endpoint).
  if (found === undefined) throw notFound(`owner ${id}`)
  return ownerView(found.owner, found.usage)
}

const changeCtx = (ctx: OpContext) => ({ now: ctx.deps.clock.now(), actor: ctx.actor })

export const ownersList = defineOp({
  name: 'owners.list',
  summary: 'The owners of the installation in id order, a page at a time, each with its limits, suspension and usage (endpoints, backlog, deliveries and attempts in 24 h; the last three counted up to 1,000, `usage.at_least` naming those that reached it)',
  scope: 'operator',
  http: { method: 'GET', path: '/api/operator/owners' },
  input: z.strictObject({ limit: limitParam, cursor: cursorParam }),
  output: pageOf(ownerViewSchema),
  async handler(ctx, input) {
    const page = await paged(() => ownersPage(ctx.deps.db, ctx.deps.clock.now(), input))
    return ok({ data: page.data.map((r) => ownerView(r.owner, r.usage)), next_cursor: page.next_cursor })
  },
})

export const ownersGet = defineOp({
  name: 'owners.get',
  summary: 'One owner: its limits, suspension and usage (an owner without limits set has the defaults: weight 1, no limits)',
  scope: 'operator',
  http: { method: 'GET', path: '/api/operator/owners/:id' },
  input: z.strictObject({ id: ownerIdParam }),
  output: ownerViewSchema,
  async handler(ctx, input) {
    return ok(await ownerOne(ctx, input.id))
  },
})

export const ownersSetLimits = defineOp({
  name: 'owners.set_limits',
  summary: "Set any subset of an owner's limits (publish_per_second, publish_burst, max_endpoints, max_in_flight, weight); omitted ones keep their value, null clears one",
  scope: 'operator',
  http: { method: 'PUT', path: '/api/operator/owners/:id/limits' },
  input: ownerLimitsPatchSchema.extend({ id: ownerIdParam }).strict(),
  output: ownerViewSchema,
  async handler(ctx, input) {
    const { id, ...patch } = input
    const { changed } = await ownerLimitsSet(ctx.deps.db, id, changeCtx(ctx), patch)
    if (changed) ctx.deps.logger.info({ owner_id: id, limits: patch, actor: ctx.actor }, 'owner:limits_set')
    return ok(await ownerOne(ctx, id))
  },
})

export const ownersSuspend = defineOp({
  name: 'owners.suspend',
  summary: "Suspend an owner: its publishes are refused (403 owner_suspended) and its deliveries wait until it is resumed; nothing is lost",
  scope: 'operator',
  http: { method: 'POST', path: '/api/operator/owners/:id/suspend' },
  input: z.strictObject({ id: ownerIdParam, reason: z.string().min(1).max(500).default('suspended by an operator') }),
  output: ownerViewSchema,
  async handler(ctx, input) {
    const { changed } = await ownerSuspend(ctx.deps.db, input.id, changeCtx(ctx), input.reason)
    if (changed) ctx.deps.logger.info({ owner_id: input.id, actor: ctx.actor }, 'owner:suspended')
    return ok(await ownerOne(ctx, input.id))
  },
})

export const ownersResume = defineOp({
  name: 'owners.resume',
  summary: 'Resume a suspended owner: it publishes again and its waiting deliveries go',
  scope: 'operator',
  http: { method: 'POST', path: '/api/operator/owners/:id/resume' },
  input: z.strictObject({ id: ownerIdParam }),
  output: ownerViewSchema,
  async handler(ctx, input) {
    const { changed } = await ownerResume(ctx.deps.db, input.id, changeCtx(ctx))
    if (changed) ctx.deps.logger.info({ owner_id: input.id, actor: ctx.actor }, 'owner:resumed')
    return ok(await ownerOne(ctx, input.id))
  },
})
