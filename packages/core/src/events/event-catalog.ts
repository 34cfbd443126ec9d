import { z } from 'zod'
import { isValidEventType, isValidGlob, matchesEventType } from './event-glob.js'

/**
 * The event catalog (SPEC §4): every type the product accepts, with its exposure. Only
 * `webhook` types ever leave the instance; the default for anything not classified is
 * `internal`, so a type nobody thought about cannot leak.
 */

/** Whether an event type may be delivered to webhook endpoints. */
export type Exposure = 'webhook' | 'internal'

/** One declared event type. */
export interface EventTypeDeclaration {
  readonly type: string
  readonly exposure: Exposure
  /** Display group in the admin UI, e.g. `bookings`. */
  readonly group: string
  /** One line, shown next to the checkbox in the admin UI. */
  readonly description: string
  /**
   * `hookledger`: an operational event hookledger publishes about its own endpoints and
   * deliveries. Applications cannot publish it, and only a subscription that names it
   * (`webhook.endpoint.*`, `webhook.**` — a glob whose first segment is literal) receives it:
   * `*` does not, so nobody is sent news they did not ask for. Absent: the application's.
   */
  readonly publishedBy?: 'hookledger'
  /** A JSON Schema (2020-12) that `data` must match (declared types only; event-data-schema.ts). */
  readonly schema?: Readonly<Record<string, unknown>> | null
  /** Deprecated: still published (with a warning) until `sunset_at`, not subscribable anew. */
  readonly deprecated?: { readonly at: string; readonly reason: string; readonly sunset_at: string | null } | null
  /** Present when the installation declared it (the `event_types` table), not only built in. */
  readonly declared?: true
}

/**
 * Names only hookledger publishes, whether or not the catalog lists them: `webhook.test` (sent by
 * `webhooks.send_test` to the one endpoint it names) and the operational namespaces
 * `webhook.endpoint.*` and `webhook.delivery.*`. Never published by an application, never declared.
 */
export function isReservedEventTypeName(name: string): boolean {
  return name === 'webhook.test' || /^webhook\.(endpoint|delivery)(\.|$)/.test(name)
}

/** Group used for extension entries that do not name one. */
export const DEFAULT_EXTENSION_GROUP = 'custom'

const seed = (group: string, entries: ReadonlyArray<readonly [string, string]>) =>
  entries.map(([type, description]) =>
    Object.freeze({ type, exposure: 'webhook' as const, group, description }),
  )

/** hookledger's operational events (`publishedBy: 'hookledger'`): thin, opt-in. */
export const OPERATIONAL_EVENT_TYPES: readonly EventTypeDeclaration[] = Object.freeze(
  (
    [
      ['webhook.endpoint.failing', 'An endpoint started failing (its first failed attempt after a success); its new deliveries wait out a cool-down.'],
      ['webhook.endpoint.disabled', 'An endpoint was disabled after failing for 5 days.'],
      ['webhook.endpoint.recovered', 'A failing endpoint answered 2xx again.'],
      ['webhook.delivery.exhausted', 'A delivery was given up after its last attempt (or its retry window).'],
    ] as const
  ).map(([type, description]) => Object.freeze({ type, exposure: 'webhook' as const, group: 'operations', description, publishedBy: 'hookledger' as const })),
)

const OPERATIONAL = new Set(OPERATIONAL_EVENT_TYPES.map((d) => d.type))
/** Whether a type is one of hookledger's operational events (whatever the catalog's extensions). */
export const isOperationalEventType = (type: string): boolean => OPERATIONAL.has(type)

/** The 39 webhook-visible types of the seed design's table, in the table's order. */
export const SEED_EVENT_TYPES: readonly EventTypeDeclaration[] = Object.freeze([
  ...seed('core', [
    [
      'corpus.note.changed',
      'A corpus note was created, updated, published, unpublished or deleted.',
    ],
    ['webhook.test', 'A test event sent by send_test to the one endpoint it names.'],
  ]),
  ...seed('access', [
    ['access_request.created', 'Someone asked for access to the instance.'],
    ['access_request.approved', 'The owner approved an access request.'],
    ['access_request.status_changed', 'An access request changed status.'],
  ]),
  ...seed('codes', [
    ['code.issued', 'An access code was issued.'],
    ['code.revoked', 'An access code was revoked.'],
    ['code.redeemed', 'An access code was redeemed.'],
  ]),
  ...seed('conversations', [
    ['conversation.started', 'A conversation was started.'],
    ['conversation.message', 'A message was added to a conversation.'],
    ['conversation.pruned', 'Old conversations were pruned.'],
    ['ghost.accepted', 'A ghost suggestion was accepted.'],
  ]),
  ...seed('bookings', [
    ['booking.created', 'A booking was created.'],
    ['booking.cancelled', 'A booking was cancelled.'],
    ['booking.rescheduled', 'A booking was moved to another time.'],
  ]),
  ...seed('jobs', [
    ['application.committed', 'A job application was committed.'],
    ['jobs.fetched', 'Job listings were fetched.'],
  ]),
  ...seed('writing', [
    ['writing.published', 'A piece of writing was published.'],
    ['writing.unpublished', 'A piece of writing was unpublished.'],
    ['vault.imported', 'A vault was imported.'],
  ]),
  ...seed('microsite', [
    ['microsite.build.settled', 'A microsite build finished, successfully or not.'],
    ['page.promoted_live', 'A page version was promoted live.'],
    ['page.rolled_back', 'A page was rolled back to an earlier version.'],
    ['page.unpublished', 'A page was unpublished.'],
    ['microsite.store.doc_inserted', 'A document was inserted into a microsite store.'],
  ]),
  ...seed('integrations', [
    ['api_key.issued', 'An API key was issued.'],
    ['api_key.revoked', 'An API key was revoked.'],
    ['supplier.connected', 'A supplier was connected.'],
    ['supplier.disconnected', 'A supplier was disconnected.'],
    ['supplier.activated', 'A supplier was activated.'],
    ['block.installed', 'A block was installed.'],
    ['block.failed', 'A block failed.'],
  ]),
  ...seed('security & billing', [
    ['gas.exhausted', 'The gas budget ran out.'],
    ['gas.refilled', 'The gas budget was refilled.'],
    ['instance.upgrade_requested', 'An instance upgrade was requested.'],
    ['owner.login', 'The owner logged in.'],
    ['owner.email_changed', 'The owner changed their email address.'],
    ['owner.recovery_requested', 'Account recovery was requested for the owner.'],
    ['ip_ban.added', 'An IP address was banned.'],
  ]),
])

/**
 * One extension entry. Strict, so a misspelt key (`exposre: 'webhook'`) is an error instead of
 * silently yielding an internal type.
 */
export const eventTypeDeclarationSchema = z.strictObject({
  type: z.string().refine(isValidEventType, {
    message: 'must be dot-separated segments of [A-Za-z0-9_], at most 200 characters',
  }),
  exposure: z.enum(['webhook', 'internal']).default('internal'),
  group: z.string().trim().min(1).max(64).default(DEFAULT_EXTENSION_GROUP),
  description: z.string().max(500).default(''),
})

/**
 * The catalog extension file: a JSON **array** of declarations (not an object), e.g.
 *
 *     [{ "type": "invoice.paid", "exposure": "webhook", "group": "billing",
 *        "description": "An invoice was paid." },
 *      { "type": "cache.flushed" }]
 *
 * `exposure` defaults to `internal`, `group` to `custom`, `description` to empty. The
 * composition root parses the file and hands the array to `createEventCatalog`, which applies
 * this schema entry by entry so errors name the entry index and field.
 */
export const eventCatalogFileSchema = z.array(eventTypeDeclarationSchema)

/** A parsed extension file. */
export type EventCatalogFile = z.output<typeof eventCatalogFileSchema>

/** Read-only view over the declared event types. */
export interface EventCatalog {
  get(type: string): EventTypeDeclaration | undefined
  /** Every type, webhook and internal, sorted by type (code-unit order). */
  all(): EventTypeDeclaration[]
  /** Built into hookledger (the seed and the operational events): its exposure cannot change. */
  isBuiltin(type: string): boolean
  isKnown(type: string): boolean
  isWebhookVisible(type: string): boolean
  /** Webhook-visible declarations, sorted by type (code-unit order). */
  webhookTypes(): EventTypeDeclaration[]
  /** False for an invalid glob or one that can match no webhook-visible, non-deprecated type (SPEC §3). */
  globMatchesSomeWebhookType(glob: string): boolean
  /** Only hookledger publishes this type (operational events, `webhook.test`, the reserved namespaces). */
  isReserved(type: string): boolean
  /** Whether an endpoint subscribed with `globs` receives `type` (opt-in types need a glob naming them). */
  subscribes(globs: readonly string[], type: string): boolean
}

/**
 * Builds the catalog from the seed plus `extra` extension entries (typically the parsed JSON
 * file named by a setting). Throws one Error listing every bad entry by index and field.
 *
 * Redeclaring a seed type with the same exposure is accepted and changes nothing (the seed's
 * group and description are kept); with a different exposure it is an error, because the
 * product's safety rules are written against the seed's exposures. Two extension entries for
 * the same type are an error.
 */
export function createEventCatalog(extra: readonly unknown[] = []): EventCatalog {
  // JSON.parse returns `any`, so guard the shape the type system cannot.
  if (!Array.isArray(extra)) {
    throw new Error('invalid event catalog extension: expected a JSON array of declarations')
  }
  const byType = new Map<string, EventTypeDeclaration>()
  for (const declaration of [...SEED_EVENT_TYPES, ...OPERATIONAL_EVENT_TYPES]) byType.set(declaration.type, declaration)

  const problems: string[] = []
  const extensionIndex = new Map<string, number>()
  extra.forEach((entry, index) => {
    const parsed = eventTypeDeclarationSchema.safeParse(entry)
    if (!parsed.success) {
      for (const issue of parsed.error.issues) problems.push(describeIssue(index, issue))
      return
    }
    const declaration = parsed.data
    const earlier = extensionIndex.get(declaration.type)
    if (earlier !== undefined) {
      problems.push(
        `entry ${index} field "type": "${declaration.type}" is already declared ` +
          `by entry ${earlier}`,
      )
      return
    }
    extensionIndex.set(declaration.type, index)
    const existing = byType.get(declaration.type)
    if (existing === undefined && isReservedEventTypeName(declaration.type)) {
      problems.push(`entry ${index} field "type": "${declaration.type}" is reserved for hookledger's own events`)
      return
    }
    if (existing !== undefined) {
      if (existing.exposure !== declaration.exposure) {
        problems.push(
          `entry ${index} field "exposure": "${declaration.type}" is a seed type with exposure ` +
            `"${existing.exposure}" and cannot be redeclared as "${declaration.exposure}"`,
        )
      }
      return
    }
    byType.set(declaration.type, Object.freeze({ ...declaration }))
  })
  if (problems.length > 0) {
    throw new Error(`invalid event catalog extension: ${problems.join('; ')}`)
  }
  return catalogOf(byType.values())
}

const BUILTIN = new Set([...SEED_EVENT_TYPES, ...OPERATIONAL_EVENT_TYPES].map((d) => d.type))
const byTypeOrder = (a: EventTypeDeclaration, b: EventTypeDeclaration) => (a.type < b.type ? -1 : a.type > b.type ? 1 : 0)

/** A catalog over exactly these declarations (one per type): built-ins, file entries, declared rows. */
export function catalogOf(declarations: Iterable<EventTypeDeclaration>): EventCatalog {
  const byType = new Map<string, EventTypeDeclaration>()
  for (const declaration of declarations) byType.set(declaration.type, declaration)
  const all = Object.freeze([...byType.values()].sort(byTypeOrder))
  const webhook = Object.freeze(all.filter((declaration) => declaration.exposure === 'webhook'))
  const subscribable = webhook.filter((declaration) => !declaration.deprecated)

  return Object.freeze({
    get: (type: string) => byType.get(type),
    all: () => [...all],
    isBuiltin: (type: string) => BUILTIN.has(type),
    isKnown: (type: string) => byType.has(type),
    isWebhookVisible: (type: string) => byType.get(type)?.exposure === 'webhook',
    webhookTypes: () => [...webhook],
    globMatchesSomeWebhookType: (glob: string) =>
      isValidGlob(glob) && subscribable.some((declaration) => matchesEventType(glob, declaration.type)),
    isReserved: (type: string) => byType.get(type)?.publishedBy === 'hookledger' || isReservedEventTypeName(type),
    subscribes: (globs: readonly string[], type: string) => {
      const optIn = byType.get(type)?.publishedBy === 'hookledger'
      return globs.some((glob) => (!optIn || !/^\*/.test(glob)) && matchesEventType(glob, type))
    },
  })
}

function describeIssue(index: number, issue: z.core.$ZodIssue): string {
  if (issue.code === 'unrecognized_keys') {
    const keys = issue.keys.map((key) => `"${key}"`).join(', ')
    return `entry ${index} field ${keys}: unknown field`
  }
  if (issue.path.length === 0) return `entry ${index}: ${issue.message}`
  return `entry ${index} field "${issue.path.map(String).join('.')}": ${issue.message}`
}
