import { z } from 'zod'
import { HEALTH_OUTCOMES, HEALTH_WINDOWS, endpointHealth, healthBuckets, type HealthWindow, type OutcomeCounts } from '@hookledger/core'
import { endpointAttemptsSince, endpointGet } from '@hookledger/store'
import { notFound } from './op-error.js'
import { defineOp, ok } from './operation.js'
import { uuidParam } from './schemas.js'

const windows = Object.keys(HEALTH_WINDOWS) as [HealthWindow, ...HealthWindow[]]

const outcomeCountsSchema = z
  .object(Object.fromEntries(HEALTH_OUTCOMES.map((o) => [o, z.number().int()])) as Record<keyof OutcomeCounts, z.ZodNumber>)
  .describe('Attempts per outcome, as the attempt history names them')

const rate = z.number().nullable().describe('completed / attempts, 0..1; null with no attempts')

export const webhooksStats = defineOp({
  name: 'webhooks.stats',
  summary:
    "An endpoint's health over a window, from its attempt history: attempts per bucket by outcome (24h: hourly; 7d: 6-hourly), success rate, latency p50/p95",
  scope: 'admin',
  http: { method: 'GET', path: '/api/admin/webhooks/:id/stats' },
  input: z.strictObject({
    id: uuidParam,
    window: z.enum(windows, { message: `must be one of ${windows.join(', ')}` }).default('24h'),
  }),
  output: z.object({
    window: z.enum(windows),
    since: z.string().describe('Start of the first bucket (aligned to the bucket length, UTC)'),
    until: z.string().describe('Now: the last bucket is the one in progress'),
    bucket_seconds: z.number().int(),
    attempts: z.number().int(),
    outcomes: outcomeCountsSchema,
    success_rate: rate,
    latency_ms: z.object({ p50: z.number().int().nullable(), p95: z.number().int().nullable() }),
    buckets: z.array(
      z.object({ start: z.string(), attempts: z.number().int(), outcomes: outcomeCountsSchema, success_rate: rate }),
    ),
  }),
  async handler(ctx, input) {
    const owner = ctx.principal.owner_id
    if (!(await endpointGet(ctx.deps.db, owner, input.id))) throw notFound('endpoint')
    const now = ctx.deps.clock.now()
    const since = healthBuckets(input.window, now)[0]!.start
    const attempts = await endpointAttemptsSince(ctx.deps.db, owner, input.id, since, now)
    const h = endpointHealth(attempts, input.window, now)
    return ok({
      window: h.window,
      since: h.since.toISOString(),
      until: h.until.toISOString(),
      bucket_seconds: h.bucket_ms / 1000,
      attempts: h.attempts,
      outcomes: h.outcomes,
      success_rate: h.success_rate,
      latency_ms: h.latency_ms,
      buckets: h.buckets.map((b) => ({ start: b.start.toISOString(), attempts: b.attempts, outcomes: b.outcomes, success_rate: b.success_rate })),
    })
  },
})
