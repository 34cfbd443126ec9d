import { z } from 'zod'
import { ledgerRead, ledgerReplayVerify, ledgerTrail, type LedgerRow } from '@hookledger/store'
import { invalidInput } from './op-input.js'
import { defineOp, ok } from './operation.js'
import { eventId, limitParam, pageOf, uuidParam } from './schemas.js'

const MAX_POSITION = 2n ** 63n - 1n

/** A ledger position as text (a bigint); also the feed's cursor. */
// One refine, not regex + refine: zod runs every check, and BigInt('x') would throw.
const positionParam = z
  .string()
  .refine(
    (v) => /^\d{1,19}$/.test(v) && BigInt(v) <= MAX_POSITION,
    'must be a ledger position (a bigint)',
  )

const ownerIdParam = z.string().min(1).max(200)

export const ledgerEntrySchema = z.object({
  position: z.string(),
  occurred_at: z.string(),
  owner_id: z.string(),
  kind: z.string(),
  endpoint_id: z.string().nullable(),
  delivery_id: z.string().nullable(),
  event_id: z.string().nullable(),
  payload: z.record(z.string(), z.unknown()),
  actor: z.string(),
})

// Sealed secrets are ciphertext, not secrets, but nobody reading the ledger needs them.
const SEALED_KEYS = new Set(['secret_sealed', 'previous_sealed', 'prev_secret_sealed'])
const withoutSealed = (record: Record<string, unknown> | null) =>
  record &&
  Object.fromEntries(
    Object.entries(record).map(([k, v]) => [k, SEALED_KEYS.has(k) && v !== null ? '[sealed]' : v]),
  )

function ledgerEntryView(row: LedgerRow): z.input<typeof ledgerEntrySchema> {
  return {
    position: String(row.position),
    occurred_at: row.occurred_at.toISOString(),
    owner_id: row.owner_id,
    kind: row.kind,
    endpoint_id: row.endpoint_id,
    delivery_id: row.delivery_id,
    event_id: row.event_id,
    payload: withoutSealed(row.payload)!,
    actor: row.actor,
  }
}

const filters = {
  owner_id: ownerIdParam.optional(),
  endpoint_id: uuidParam.optional(),
  delivery_id: uuidParam.optional(),
  event_id: eventId.optional(),
}

export const ledgerReadOp = defineOp({
  name: 'ledger.read',
  summary: 'The ledger in position order, filtered; follow next_cursor (as `after`) to tail it',
  scope: 'operator',
  http: { method: 'GET', path: '/api/operator/ledger' },
  input: z.strictObject({
    after: positionParam.optional(),
    // `cursor` is the name every other list uses; both mean the same here.
    cursor: positionParam.optional(),
    limit: limitParam,
    ...filters,
  }),
  output: pageOf(ledgerEntrySchema),
  async handler(ctx, { after, cursor, ...rest }) {
    const page = await ledgerRead(ctx.deps.db, { ...rest, after: after ?? cursor })
    return ok({ data: page.data.map(ledgerEntryView), next_cursor: page.next_cursor })
  },
})

export const ledgerAuditOp = defineOp({
  name: 'ledger.audit',
  summary:
    'Every entry about one delivery, endpoint or event, in order: why it was or was not delivered',
  scope: 'operator',
  http: { method: 'GET', path: '/api/operator/ledger/audit' },
  input: z.strictObject({
    ...filters,
    limit: z.coerce.number().int().min(1).max(10_000).default(1000),
  }),
  output: z.object({ data: z.array(ledgerEntrySchema), truncated: z.boolean() }),
  async handler(ctx, { limit, ...filter }) {
    if (!filter.delivery_id && !filter.endpoint_id && !filter.event_id) {
      throw invalidInput('delivery_id', 'name a delivery_id, endpoint_id or event_id to audit')
    }
    const trail = await ledgerTrail(ctx.deps.db, filter, limit)
    return ok({ data: trail.data.map(ledgerEntryView), truncated: trail.truncated })
  },
})

export const replayReportSchema = z.object({
  ledger_rows: z.number().int(),
  endpoints: z.number().int(),
  deliveries: z.number().int(),
  attempts: z.number().int(),
  ms: z.number(),
  differences: z.array(
    z.object({
      table: z.enum(['endpoints', 'deliveries', 'delivery_attempts']),
      key: z.string(),
      kind: z.enum(['changed', 'missing_live', 'extra_live']),
      columns: z.array(z.string()),
      live: z.record(z.string(), z.unknown()).nullable(),
      replayed: z.record(z.string(), z.unknown()).nullable(),
    }),
  ),
})

export const ledgerReplayOp = defineOp({
  name: 'ledger.replay',
  summary:
    'Rebuild the projections from the ledger into scratch tables and diff them with the live ones',
  scope: 'operator',
  http: { method: 'POST', path: '/api/operator/ledger/replay' },
  input: z.strictObject({}),
  output: replayReportSchema,
  async handler(ctx) {
    const report = await ledgerReplayVerify(ctx.deps.db)
    return ok({
      ledger_rows: report.ledgerRows,
      endpoints: report.endpoints,
      deliveries: report.deliveries,
      attempts: report.attempts,
      ms: report.ms,
      differences: report.differences.map((d) => ({
        ...d,
        live: withoutSealed(d.live),
        replayed: withoutSealed(d.replayed),
      })),
    })
  },
})
