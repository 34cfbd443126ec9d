import { describe, expect, it } from 'vitest'
import { createEventCatalog, eventCatalogFileSchema, OPERATIONAL_EVENT_TYPES, SEED_EVENT_TYPES } from './event-catalog.js'

/** The seed table's types plus hookledger's four operational ones. */
const ALL_WEBHOOK = 39 + 4
import { isValidEventType } from './event-glob.js'

/** The seed design's table, copied verbatim, so a typo in the catalog cannot hide. */
const SEED_TABLE: Record<string, string[]> = {
  core: ['corpus.note.changed', 'webhook.test'],
  access: ['access_request.created', 'access_request.approved', 'access_request.status_changed'],
  codes: ['code.issued', 'code.revoked', 'code.redeemed'],
  conversations: [
    'conversation.started',
    'conversation.message',
    'conversation.pruned',
    'ghost.accepted',
  ],
  bookings: ['booking.created', 'booking.cancelled', 'booking.rescheduled'],
  jobs: ['application.committed', 'jobs.fetched'],
  writing: ['writing.published', 'writing.unpublished', 'vault.imported'],
  microsite: [
    'microsite.build.settled',
    'page.promoted_live',
    'page.rolled_back',
    'page.unpublished',
    'microsite.store.doc_inserted',
  ],
  integrations: [
    'api_key.issued',
    'api_key.revoked',
    'supplier.connected',
    'supplier.disconnected',
    'supplier.activated',
    'block.installed',
    'block.failed',
  ],
  'security & billing': [
    'gas.exhausted',
    'gas.refilled',
    'instance.upgrade_requested',
    'owner.login',
    'owner.email_changed',
    'owner.recovery_requested',
    'ip_ban.added',
  ],
}
const SEED_ROWS = Object.entries(SEED_TABLE).flatMap(([group, types]) =>
  types.map((type) => [type, group] as const),
)

describe('SEED_EVENT_TYPES', () => {
  it('has the 39 types of the seed table, no duplicates', () => {
    expect(SEED_ROWS).toHaveLength(39)
    expect(SEED_EVENT_TYPES).toHaveLength(39)
    expect(new Set(SEED_EVENT_TYPES.map((d) => d.type)).size).toBe(39)
  })

  it.each(SEED_ROWS)(
    '%s is webhook-visible in group %s with a one-line description',
    (type, group) => {
      const declaration = SEED_EVENT_TYPES.find((d) => d.type === type)
      expect(declaration).toBeDefined()
      expect(declaration?.exposure).toBe('webhook')
      expect(declaration?.group).toBe(group)
      expect(declaration?.description).toMatch(/^\S.*\S$/)
      expect(declaration?.description).not.toContain('\n')
      expect(isValidEventType(type)).toBe(true)
    },
  )

  it('is frozen', () => {
    expect(Object.isFrozen(SEED_EVENT_TYPES)).toBe(true)
    expect(SEED_EVENT_TYPES.every((d) => Object.isFrozen(d))).toBe(true)
  })
})

describe('createEventCatalog (seed only)', () => {
  const catalog = createEventCatalog()

  it('knows every seed type and nothing else', () => {
    for (const [type] of SEED_ROWS) {
      expect(catalog.isKnown(type)).toBe(true)
      expect(catalog.isWebhookVisible(type)).toBe(true)
      expect(catalog.get(type)?.type).toBe(type)
    }
    expect(catalog.isKnown('booking.deleted')).toBe(false)
    expect(catalog.isWebhookVisible('booking.deleted')).toBe(false)
    expect(catalog.get('booking.deleted')).toBeUndefined()
  })

  it('lists webhook types sorted by type, as a fresh copy each time', () => {
    const types = catalog.webhookTypes().map((d) => d.type)
    expect(types).toEqual([...SEED_ROWS.map(([type]) => type), ...OPERATIONAL_EVENT_TYPES.map((d) => d.type)].sort())
    const first = catalog.webhookTypes()
    first.pop()
    expect(catalog.webhookTypes()).toHaveLength(ALL_WEBHOOK)
  })

  it.each([
    ['*', true],
    ['**', true],
    ['booking.*', true],
    ['booking.**', true],
    ['*.created', true],
    ['microsite.**', true],
    ['microsite.*', false], // microsite types all have three segments
    ['microsite.*.*', true],
    ['**.doc_inserted', true],
    ['corpus.note.changed', true],
    ['booking.deleted', false],
    ['nothing.**', false],
    ['*.*.*.*', false],
    ['book*', false],
    ['', false],
  ])('globMatchesSomeWebhookType(%j) → %s', (glob, expected) => {
    expect(catalog.globMatchesSomeWebhookType(glob)).toBe(expected)
  })
})

describe('operational events: published by hookledger only, received only when named', () => {
  const catalog = createEventCatalog()
  it.each<[string[], string, boolean]>([
    [['*'], 'webhook.endpoint.failing', false],
    [['**'], 'webhook.endpoint.failing', false],
    [['*.endpoint.failing'], 'webhook.endpoint.failing', false],
    [['webhook.endpoint.*'], 'webhook.endpoint.failing', true],
    [['webhook.**'], 'webhook.delivery.exhausted', true],
    [['booking.*', 'webhook.endpoint.disabled'], 'webhook.endpoint.disabled', true],
    [['webhook.endpoint.*'], 'webhook.delivery.exhausted', false],
    [['*'], 'booking.created', true],
    [['**'], 'webhook.test', true],
  ])('%j subscribes to %s → %s', (globs, type, expected) => {
    expect(catalog.subscribes(globs, type)).toBe(expected)
  })

  it('are reserved: declared webhook-visible, in their own group', () => {
    for (const d of OPERATIONAL_EVENT_TYPES) {
      expect(catalog.isReserved(d.type)).toBe(true)
      expect(catalog.isWebhookVisible(d.type)).toBe(true)
      expect(d.group).toBe('operations')
    }
    expect(catalog.isReserved('booking.created')).toBe(false)
  })

  it.each<[string, boolean]>([
    ['webhook.test', true],
    ['webhook.endpoint.failing', true],
    ['webhook.endpoint.anything_new', true],
    ['webhook.delivery.exhausted', true],
    ['webhook.delivery', true],
    ['webhook.other', false],
    ['webhooks.test', false],
    ['order.created', false],
  ])('%s is reserved (published by hookledger only, declared or not) → %s', (type, expected) => {
    expect(catalog.isReserved(type)).toBe(expected)
  })
})

describe('createEventCatalog (extensions)', () => {
  it('defaults an extension to internal exposure, group custom, empty description', () => {
    const catalog = createEventCatalog([{ type: 'cache.flushed' }])
    expect(catalog.get('cache.flushed')).toEqual({
      type: 'cache.flushed',
      exposure: 'internal',
      group: 'custom',
      description: '',
    })
    expect(catalog.isKnown('cache.flushed')).toBe(true)
    expect(catalog.isWebhookVisible('cache.flushed')).toBe(false)
    expect(catalog.webhookTypes()).toHaveLength(ALL_WEBHOOK)
    expect(catalog.globMatchesSomeWebhookType('cache.*')).toBe(false)
  })

  it('adds webhook-visible extensions to the sorted list and to glob validation', () => {
    const catalog = createEventCatalog([
      { type: 'invoice.paid', exposure: 'webhook', group: 'billing', description: 'Paid.' },
      { type: 'aaa.first', exposure: 'webhook' },
    ])
    const types = catalog.webhookTypes().map((d) => d.type)
    expect(types).toHaveLength(ALL_WEBHOOK + 2)
    expect(types[0]).toBe('aaa.first')
    expect(types).toContain('invoice.paid')
    expect(catalog.globMatchesSomeWebhookType('invoice.*')).toBe(true)
    expect(catalog.get('invoice.paid')?.group).toBe('billing')
  })

  it('accepts redeclaring a seed type with the same exposure and keeps the seed entry', () => {
    const catalog = createEventCatalog([
      { type: 'booking.created', exposure: 'webhook', description: 'overridden?' },
    ])
    expect(catalog.get('booking.created')?.description).toBe('A booking was created.')
    expect(catalog.webhookTypes()).toHaveLength(ALL_WEBHOOK)
  })

  it.each<[string, unknown[], RegExp]>([
    ['not an object', ['booking.created'], /entry 0: /],
    ['missing type', [{ exposure: 'webhook' }], /entry 0 field "type"/],
    ['invalid type', [{ type: 'Bad-Type' }], /entry 0 field "type": must be dot-separated/],
    ['glob as type', [{ type: 'booking.*' }], /entry 0 field "type"/],
    [
      'bad exposure',
      [{ type: 'a.b' }, { type: 'c.d', exposure: 'public' }],
      /entry 1 field "exposure"/,
    ],
    ['typo key', [{ type: 'a.b', exposre: 'webhook' }], /entry 0 field "exposre": unknown field/],
    ['empty group', [{ type: 'a.b', group: ' ' }], /entry 0 field "group"/],
    [
      'long description',
      [{ type: 'a.b', description: 'x'.repeat(501) }],
      /entry 0 field "description"/,
    ],
    [
      'seed redeclared internal (by default)',
      [{ type: 'booking.created' }],
      /entry 0 field "exposure": "booking.created" is a seed type with exposure "webhook"/,
    ],
    [
      'seed redeclared internal (explicitly)',
      [{ type: 'x.y' }, { type: 'webhook.test', exposure: 'internal' }],
      /entry 1 field "exposure"/,
    ],
    ['a reserved name', [{ type: 'webhook.endpoint.mine' }], /entry 0 field "type": "webhook.endpoint.mine" is reserved/],
    [
      'duplicate extension',
      [{ type: 'a.b' }, { type: 'c.d' }, { type: 'a.b', exposure: 'webhook' }],
      /entry 2 field "type": "a.b" is already declared by entry 0/,
    ],
  ])('refuses %s', (_name, extra, message) => {
    expect(() => createEventCatalog(extra)).toThrow(message)
  })

  it('reports every bad entry in one error', () => {
    expect(() =>
      createEventCatalog([{ type: '' }, { type: 'ok.one' }, { type: 'x', group: 1 }]),
    ).toThrow(/entry 0 field "type".*; entry 2 field "group"/)
  })

  it('refuses a non-array (e.g. a parsed JSON object)', () => {
    expect(() => createEventCatalog({ types: [] } as unknown as unknown[])).toThrow(
      /expected a JSON array/,
    )
  })
})

describe('eventCatalogFileSchema', () => {
  it('parses an array of declarations and applies defaults', () => {
    expect(eventCatalogFileSchema.parse([{ type: 'a.b' }])).toEqual([
      { type: 'a.b', exposure: 'internal', group: 'custom', description: '' },
    ])
  })

  it.each([[{ types: [] }], ['a.b'], [[{ type: 'a..b' }]]])('refuses %j', (input) => {
    expect(eventCatalogFileSchema.safeParse(input).success).toBe(false)
  })
})
