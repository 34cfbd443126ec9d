import { z } from 'zod'
import {
  ledgerRead,
  ledgerReplayVerify,
  ledgerTrail,
  parseLedgerCursor,
  type LedgerChainRow,
  type LedgerRow,
} from '@hookledger/ledger'
import { invalidInput } from './op-input.js'
import { defineOp, ok } from './operation.js'
import { eventId, limitParam, pageOf, uuidParam } from './schemas.js'

/** Where the feed resumes: a cursor it returned (`<tx_id>.<position>`). */
// The store's parser is the check, so the op and the query agree on what a cursor is.
const feedCursorParam = z
  .string()
  .refine(
    (v) => parseLedgerCursor(v) !== null,
    'must be a ledger cursor (`<tx_id>.<position>`, from next_cursor)',
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
const SEALED_KEYS = new Set([
  'secret_sealed',
  'previous_sealed',
  'prev_secret_sealed',
  'v1a_key_sealed',
  'previous_v1a_sealed',
  'prev_v1a_key_sealed',
])
// Sealed custom headers: the names are shown, each value as `[sealed]`.
const SEALED_MAPS = new Set(['secret_headers_sealed'])
const sealedMap = (v: unknown) =>
  v !== null && typeof v === 'object' ? Object.fromEntries(Object.keys(v).map((name) => [name, '[sealed]'])) : v
// Client authentication objects hold a sealed part of their own (mtls.private_key_sealed, …).
const SEALED_INSIDE = new Set(['mtls', 'oauth2'])
const NESTED_SEALED_KEYS = new Set(['private_key_sealed', 'client_secret_sealed'])
const sealedInside = (v: unknown) =>
  v !== null && typeof v === 'object'
    ? Object.fromEntries(Object.entries(v).map(([k, inner]) => [k, NESTED_SEALED_KEYS.has(k) ? '[sealed]' : inner]))
    : v
const withoutSealed = (record: Record<string, unknown> | null): Record<string, unknown> | null =>
  record &&
  Object.fromEntries(
    Object.entries(record).map(([k, v]) => [
      k,
      SEALED_MAPS.has(k) ? sealedMap(v) : SEALED_INSIDE.has(k) ? sealedInside(v) : SEALED_KEYS.has(k) && v !== null ? '[sealed]' : v,
    ]),
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

/** A feed entry: the ledger entry and the id of the transaction that wrote it (its chain key). */
export const ledgerFeedEntrySchema = ledgerEntrySchema.extend({ tx_id: z.string() })

function ledgerFeedEntryView(row: LedgerChainRow): z.input<typeof ledgerFeedEntrySchema> {
  const { position, ...entry } = ledgerEntryView(row)
  return { position, tx_id: String(row.tx_id), ...entry }
}

const filters = {
  owner_id: ownerIdParam.optional(),
  endpoint_id: uuidParam.optional(),
  delivery_id: uuidParam.optional(),
  event_id: eventId.optional(),
}

export const ledgerReadOp = defineOp({
  name: 'ledger.read',
  summary:
    'The ledger in commit-safe (tx_id, position) order, filtered; follow next_cursor (as `after`) to tail it',
  scope: 'operator',
  http: { method: 'GET', path: '/api/operator/ledger' },
  input: z.strictObject({
    after: feedCursorParam.optional(),
    // `cursor` is the name every other list uses; both mean the same here.
    cursor: feedCursorParam.optional(),
    limit: limitParam,
    ...filters,
  }),
  output: pageOf(ledgerFeedEntrySchema),
  async handler(ctx, { after, cursor, ...rest }) {
    const page = await ledgerRead(ctx.deps.db, { ...rest, after: after ?? cursor })
    return ok({ data: page.data.map(ledgerFeedEntryView), next_cursor: page.next_cursor })
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

const differenceKind = z.enum(['changed', 'missing_live', 'extra_live', 'inconsistent'])
const differenceCounts = z.object({
  changed: z.number().int(),
  missing_live: z.number().int(),
  extra_live: z.number().int(),
  inconsistent: z.number().int(),
})

export const replayReportSchema = z.object({
  ledger_rows: z.number().int(),
  endpoints: z.number().int(),
  deliveries: z.number().int(),
  attempts: z.number().int(),
  ms: z.number(),
  /** The differences kept (up to `max_differences`); the totals count them all. */
  differences: z.array(
    z.object({
      table: z.enum(['endpoints', 'deliveries', 'endpoint_queue', 'events', 'api_tokens', 'access_codes', 'embeds', 'event_types', 'owners']),
      key: z.string(),
      kind: differenceKind,
      columns: z.array(z.string()),
      live: z.record(z.string(), z.unknown()).nullable(),
      replayed: z.record(z.string(), z.unknown()).nullable(),
      /** `inconsistent`: the ledger position of the entry at fault, and what is wrong. */
      position: z.string().optional(),
      problem: z.string().optional(),
    }),
  ),
  differences_total: z.number().int(),
  differences_omitted: z.number().int(),
  difference_counts: z.object({
    endpoints: differenceCounts, deliveries: differenceCounts, endpoint_queue: differenceCounts,
    events: differenceCounts, api_tokens: differenceCounts, access_codes: differenceCounts, embeds: differenceCounts,
    event_types: differenceCounts, owners: differenceCounts,
  }),
})

export const ledgerReplayOp = defineOp({
  name: 'ledger.replay',
  summary:
    'Rebuild the projections from the ledger, check each row\'s history, and diff them with the live ones',
  scope: 'operator',
  http: { method: 'POST', path: '/api/operator/ledger/replay' },
  input: z.strictObject({
    /** How many differences the answer lists (all are counted). Default 1,000. */
    max_differences: z.number().int().min(0).max(100_000).optional(),
  }),
  output: replayReportSchema,
  async handler(ctx, input) {
    const report = await ledgerReplayVerify(ctx.deps.db, {
      ...(input.max_differences !== undefined ? { maxDifferences: input.max_differences } : {}),
    })
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
      differences_total: report.differencesTotal,
      differences_omitted: report.differencesOmitted,
      difference_counts: report.differenceCounts,
    })
  },
})
