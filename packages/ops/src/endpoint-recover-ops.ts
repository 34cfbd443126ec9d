import { z } from 'zod'
import {
  RECOVER_BATCH_DEFAULT,
  RECOVER_BATCH_MAX,
  RECOVER_MISSED_REASONS,
  RECOVER_SKIP_REASONS,
  RECOVER_WINDOW_MAX_MS,
} from '@hookledger/core'
import { createTableEmbedAdmits, endpointRecover, EVENT_RETENTION_DEFAULT_MS } from '@hookledger/store'
import { OpError, notFound } from './op-error.js'
import { invalidInput } from './op-input.js'
import { defineOp, ok } from './operation.js'
import { isoTimestamp, uuidParam } from './schemas.js'
import { paged } from './webhook-ops.js'

const REFUSALS = {
  endpoint_disabled: 'the endpoint is disabled: a recover would only be discarded again; switch it on with enabled: true, then recover',
  endpoint_deleted: 'the endpoint is deleted: there is nothing to recover for',
} as const

const WINDOW_MAX_DAYS = RECOVER_WINDOW_MAX_MS / 86_400_000

const counts = <K extends string>(keys: readonly K[]) =>
  z.object(Object.fromEntries(keys.map((k) => [k, z.number().int()])) as Record<K, z.ZodNumber>)

export const webhooksRecover = defineOp({
  name: 'webhooks.recover',
  summary:
    `Deliver to this endpoint what it missed in [since, until): every event of the owner it matches now (the fan-out's rules) with no live delivery — a new delivery, or a new run of a discarded one — each marked recovered in the ledger with why it was missed. At most ${RECOVER_BATCH_MAX} events per call (next_cursor continues); dry_run: true answers the counts and writes nothing`,
  scope: 'admin',
  http: { method: 'POST', path: '/api/admin/webhooks/:id/recover' },
  input: z
    .strictObject({
      id: uuidParam,
      since: isoTimestamp,
      /** Default: now. */
      until: isoTimestamp.optional(),
      dry_run: z.boolean().default(false),
      limit: z.number().int().min(1).max(RECOVER_BATCH_MAX).default(RECOVER_BATCH_DEFAULT),
      cursor: z.string().min(1).max(512).optional(),
    })
    .refine((i) => i.until === undefined || Date.parse(i.since) < Date.parse(i.until), { message: 'must be after since', path: ['until'] }),
  output: z.object({
    dry_run: z.boolean(),
    since: z.string(),
    until: z.string(),
    /** Events of the owner in the window this call looked at. */
    scanned: z.number().int(),
    /** What this call recovers (or, dry run, would): new deliveries plus new runs. */
    would_enqueue: z.number().int(),
    /** What it wrote: 0 on a dry run. */
    enqueued: z.number().int(),
    already_delivered: z.number().int(),
    in_flight: z.number().int(),
    skipped: counts(RECOVER_SKIP_REASONS),
    /** Per recovered event, why the endpoint missed it (from the fan-out's decision). */
    recovered: z.array(
      z.object({
        event_id: z.string(),
        type: z.string(),
        published_at: z.string(),
        delivery_id: z.string(),
        action: z.enum(['new_delivery', 'new_run']),
        missed: z.enum(RECOVER_MISSED_REASONS),
      }),
    ),
    /** More events in the window: call again with the same input and this cursor. */
    next_cursor: z.string().nullable(),
  }),
  async handler(ctx, input) {
    const now = ctx.deps.clock.now()
    const since = new Date(input.since)
    const until = input.until !== undefined ? new Date(input.until) : now
    if (input.until === undefined && since >= until) throw invalidInput('since', 'must be before until (default: now)')
    if (until.getTime() - since.getTime() > RECOVER_WINDOW_MAX_MS) {
      throw invalidInput('since', `the window is at most ${WINDOW_MAX_DAYS} days: recover a longer one in several calls`)
    }
    const c = { owner_id: ctx.principal.owner_id, now, actor: ctx.actor }
    const res = await paged(() =>
      ctx.deps.db.transaction().execute((trx) =>
        endpointRecover(trx, c, {
          endpoint_id: input.id,
          since,
          until,
          limit: input.limit,
          cursor: input.cursor,
          dry_run: input.dry_run,
          catalog: ctx.deps.catalog,
          embedAdmits: createTableEmbedAdmits(ctx.deps.db),
          retentionMs: ctx.deps.eventRetentionMs ?? EVENT_RETENTION_DEFAULT_MS,
        }),
      ),
    )
    if (res === null) throw notFound('endpoint')
    if ('refused' in res) throw new OpError(res.refused, REFUSALS[res.refused])
    return ok({
      dry_run: input.dry_run,
      since: since.toISOString(),
      until: until.toISOString(),
      scanned: res.scanned,
      would_enqueue: res.recovered.length,
      enqueued: input.dry_run ? 0 : res.recovered.length,
      already_delivered: res.already_delivered,
      in_flight: res.in_flight,
      skipped: res.skipped,
      recovered: res.recovered.map((r) => ({ ...r, published_at: r.published_at.toISOString() })),
      next_cursor: res.next_cursor,
    })
  },
})
