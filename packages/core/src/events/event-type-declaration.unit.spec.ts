import { describe, expect, it } from 'vitest'
import { createEventCatalog } from './event-catalog.js'
import { eventRefusal, eventWarning } from './event-rules.js'
import {
  catalogWithDeclared,
  eventTypeDeclareDecision,
  eventTypeDeclareInputSchema,
  eventTypeDeprecateDecision,
  eventTypeDeprecateInputSchema,
  eventTypeUpdateDecision,
  eventTypeUpdateInputSchema,
  type DeclaredEventType,
} from './event-type-declaration.js'

const T0 = new Date('2030-01-01T00:00:00Z')
const row = (name: string, over: Partial<DeclaredEventType> = {}): DeclaredEventType => ({
  name, description: '', exposure: 'webhook', group: 'custom', schema: null,
  deprecated_at: null, deprecation_reason: null, sunset_at: null, declared_at: T0, updated_at: T0, ...over,
})
const ORDER_SCHEMA = { type: 'object', required: ['order_id'], properties: { order_id: { type: 'string' }, total: { type: 'number' } }, additionalProperties: false }
const base = createEventCatalog()

describe('eventTypeDeclareDecision', () => {
  const declare = (input: Record<string, unknown>, existing: DeclaredEventType | null = null) =>
    eventTypeDeclareDecision(base, existing, eventTypeDeclareInputSchema.parse(input))
  it.each<[string, Record<string, unknown>, DeclaredEventType | null, unknown]>([
    ['a new webhook type', { name: 'order.created', exposure: 'webhook', description: 'An order.' },
      null, { payload: { name: 'order.created', description: 'An order.', exposure: 'webhook', group: 'custom', schema: null } }],
    ['a new internal type with a group and schema', { name: 'cache.flushed', exposure: 'internal', group: 'ops', schema: ORDER_SCHEMA },
      null, { payload: { name: 'cache.flushed', description: '', exposure: 'internal', group: 'ops', schema: ORDER_SCHEMA } }],
    ['a built-in with its own exposure (a schema for it): keeps its group', { name: 'booking.created', exposure: 'webhook', schema: { type: 'object' } },
      null, { payload: { name: 'booking.created', description: '', exposure: 'webhook', group: 'bookings', schema: { type: 'object' } } }],
    ['a built-in made internal', { name: 'booking.created', exposure: 'internal' }, null, { refusal: { code: 'event_type_builtin', field: 'exposure' } }],
    ['webhook.test', { name: 'webhook.test', exposure: 'webhook' }, null, { refusal: { code: 'reserved_event_type', field: 'name' } }],
    ['an operational event', { name: 'webhook.endpoint.failing', exposure: 'webhook' }, null, { refusal: { code: 'reserved_event_type' } }],
    ['a new name in a reserved namespace', { name: 'webhook.delivery.late', exposure: 'webhook' }, null, { refusal: { code: 'reserved_event_type' } }],
    ['a type declared already', { name: 'order.created', exposure: 'webhook' }, row('order.created'), { refusal: { code: 'event_type_exists', field: 'name' } }],
    ['a schema that is no JSON Schema', { name: 'order.created', exposure: 'webhook', schema: { type: 'objekt' } }, null, { refusal: { code: 'invalid_input', field: 'schema' } }],
    ['a schema with a misspelt keyword', { name: 'order.created', exposure: 'webhook', schema: { type: 'object', requird: ['x'] } }, null, { refusal: { code: 'invalid_input', field: 'schema' } }],
    ['a schema of another draft', { name: 'order.created', exposure: 'webhook', schema: { $schema: 'http://json-schema.org/draft-07/schema#' } }, null, { refusal: { code: 'invalid_input', field: 'schema' } }],
    ['a schema with a remote $ref (nothing is fetched)', { name: 'order.created', exposure: 'webhook', schema: { $ref: 'https://example.com/s.json' } }, null, { refusal: { code: 'invalid_input', field: 'schema' } }],
  ])('%s', (_, input, existing, expected) => {
    expect(declare(input, existing)).toMatchObject(expected as object)
  })

  it.each<[string, Record<string, unknown>, string]>([
    ['exposure is required', { name: 'order.created' }, 'exposure'],
    ['a glob is no name', { name: 'order.*', exposure: 'webhook' }, 'name'],
    ['an unknown field', { name: 'a.b', exposure: 'webhook', exposre: 'x' }, ''],
  ])('input: %s', (_, input, field) => {
    const parsed = eventTypeDeclareInputSchema.safeParse(input)
    expect(parsed.success).toBe(false)
    expect(parsed.error!.issues[0]!.path.join('.')).toBe(field)
  })

  it('the refusal of a built-in redefinition says what it is', () => {
    expect(declare({ name: 'booking.created', exposure: 'internal' })).toMatchObject({ refusal: { message: expect.stringContaining('built in with exposure "webhook"') } })
  })
})

describe('eventTypeUpdateDecision', () => {
  const update = (input: Record<string, unknown>, existing: DeclaredEventType | null) =>
    eventTypeUpdateDecision(base, existing, eventTypeUpdateInputSchema.parse(input))
  it.each<[string, Record<string, unknown>, DeclaredEventType | null, unknown]>([
    ['only what changes', { name: 'order.created', description: 'New.', exposure: 'webhook' }, row('order.created'), { payload: { name: 'order.created', description: 'New.' } }],
    ['nothing changes', { name: 'order.created', exposure: 'webhook', group: 'custom' }, row('order.created'), { payload: null }],
    ['a declared type made internal', { name: 'order.created', exposure: 'internal' }, row('order.created'), { payload: { name: 'order.created', exposure: 'internal' } }],
    ['the schema removed', { name: 'order.created', schema: null }, row('order.created', { schema: ORDER_SCHEMA }), { payload: { name: 'order.created', schema: null } }],
    ['a new schema', { name: 'order.created', schema: ORDER_SCHEMA }, row('order.created'), { payload: { name: 'order.created', schema: ORDER_SCHEMA } }],
    ['a bad schema', { name: 'order.created', schema: { type: 1 } }, row('order.created'), { refusal: { code: 'invalid_input', field: 'schema' } }],
    ['not declared', { name: 'order.created', description: 'x' }, null, { refusal: { code: 'not_found', message: expect.stringContaining('POST /api/operator/event_types') } }],
    ['a declared built-in made internal', { name: 'booking.created', exposure: 'internal' }, row('booking.created'), { refusal: { code: 'event_type_builtin' } }],
    ['a declared built-in described', { name: 'booking.created', description: 'Mine.' }, row('booking.created'), { payload: { name: 'booking.created', description: 'Mine.' } }],
  ])('%s', (_, input, existing, expected) => {
    expect(update(input, existing)).toMatchObject(expected as object)
  })
})

describe('eventTypeDeprecateDecision', () => {
  const deprecate = (input: Record<string, unknown>, existing: DeclaredEventType | null) =>
    eventTypeDeprecateDecision(base, existing, eventTypeDeprecateInputSchema.parse(input), T0)
  it.each<[string, Record<string, unknown>, DeclaredEventType | null, unknown]>([
    ['with a reason and a sunset', { name: 'order.created', reason: 'use order.placed', sunset_at: '2030-02-01T00:00:00+01:00' }, row('order.created'),
      { payload: { name: 'order.created', reason: 'use order.placed', sunset_at: '2030-01-31T23:00:00.000Z' } }],
    ['without a sunset', { name: 'order.created' }, row('order.created'), { payload: { name: 'order.created', reason: '', sunset_at: null } }],
    ['a sunset in the past', { name: 'order.created', sunset_at: '2029-01-01T00:00:00Z' }, row('order.created'), { refusal: { code: 'invalid_input', field: 'sunset_at' } }],
    ['already deprecated', { name: 'order.created' }, row('order.created', { deprecated_at: T0 }), { refusal: { code: 'event_type_deprecated' } }],
    ['not declared', { name: 'order.created' }, null, { refusal: { code: 'not_found' } }],
    ['a built-in, not declared', { name: 'booking.created' }, null, { refusal: { code: 'not_found', message: expect.stringContaining('built in') } }],
    ['a built-in, declared', { name: 'booking.created' }, row('booking.created'), { refusal: { code: 'event_type_builtin' } }],
  ])('%s', (_, input, existing, expected) => {
    expect(deprecate(input, existing)).toMatchObject(expected as object)
  })
})

describe('catalogWithDeclared: built-ins merged with declared rows', () => {
  const catalog = catalogWithDeclared(base, [
    row('order.created', { schema: ORDER_SCHEMA, description: 'An order was created.' }),
    row('cache.flushed', { exposure: 'internal' }),
    row('order.legacy', { deprecated_at: T0, deprecation_reason: 'use order.created', sunset_at: new Date('2030-03-01T00:00:00Z') }),
    // Rows that try what the decisions refuse: the built-in's exposure and reserved names hold.
    row('booking.created', { exposure: 'internal', description: 'Described.', deprecated_at: T0 }),
    row('webhook.test', { exposure: 'internal' }),
    row('webhook.endpoint.mine'),
  ])
  it.each<[string, { known: boolean; webhook: boolean; reserved: boolean }]>([
    ['order.created', { known: true, webhook: true, reserved: false }],
    ['cache.flushed', { known: true, webhook: false, reserved: false }],
    ['order.legacy', { known: true, webhook: true, reserved: false }],
    ['booking.created', { known: true, webhook: true, reserved: false }],
    ['webhook.test', { known: true, webhook: true, reserved: true }],
    ['webhook.endpoint.mine', { known: false, webhook: false, reserved: true }],
    ['order.unknown', { known: false, webhook: false, reserved: false }],
  ])('%s', (type, expected) => {
    expect({ known: catalog.isKnown(type), webhook: catalog.isWebhookVisible(type), reserved: catalog.isReserved(type) }).toEqual(expected)
  })
  it('a declared built-in gives its description and schema, never its exposure or a deprecation', () => {
    expect(catalog.get('booking.created')).toMatchObject({ exposure: 'webhook', group: 'bookings', description: 'Described.', deprecated: null, declared: true })
  })
  it.each<[string, boolean]>([
    ['order.*', true],
    ['order.legacy', false], // deprecated: no new subscriptions
    ['cache.*', false], // internal
    ['*', true],
  ])('a new glob %s matches something subscribable → %s', (glob, expected) => {
    expect(catalog.globMatchesSomeWebhookType(glob)).toBe(expected)
  })
  it('lists every type, the declared ones among the built-ins', () => {
    expect(catalog.all().map((d) => d.type)).toEqual(expect.arrayContaining(['order.created', 'cache.flushed', 'booking.created']))
    expect(catalog.all()).toHaveLength(base.all().length + 3)
  })
  it('no rows: the base itself', () => expect(catalogWithDeclared(base, [])).toBe(base))
})

describe('eventRefusal with the declared catalog', () => {
  const catalog = catalogWithDeclared(base, [
    row('order.created', { schema: ORDER_SCHEMA }),
    row('order.legacy', { deprecated_at: T0, deprecation_reason: 'use order.created', sunset_at: new Date('2030-03-01T00:00:00Z') }),
  ])
  const before = new Date('2030-02-01T00:00:00Z')
  const after = new Date('2030-03-01T00:00:00Z')
  it.each<[string, string, Record<string, unknown>, Date, unknown]>([
    ['data matching the schema', 'order.created', { order_id: 'o1', total: 3 }, before, null],
    ['a missing required property: the pointer names it', 'order.created', { total: 3 }, before,
      { code: 'event_data_invalid', field: 'data.order_id', pointer: '/data/order_id', message: expect.stringContaining('/data/order_id') }],
    ['a wrong type', 'order.created', { order_id: 1 }, before, { code: 'event_data_invalid', field: 'data.order_id', pointer: '/data/order_id' }],
    ['an unexpected property', 'order.created', { order_id: 'o', extra: true }, before, { code: 'event_data_invalid', pointer: '/data/extra' }],
    ['an undeclared type: says how to declare one', 'order.shipped', {}, before,
      { code: 'unknown_event_type', field: 'type', message: expect.stringContaining('POST /api/operator/event_types') }],
    ['webhook.test', 'webhook.test', {}, before, { code: 'reserved_event_type', message: expect.stringContaining('send_test') }],
    ['a reserved namespace', 'webhook.delivery.late', {}, before, { code: 'reserved_event_type' }],
    ['a deprecated type before its sunset', 'order.legacy', {}, before, null],
    ['a deprecated type at its sunset', 'order.legacy', {}, after, { code: 'event_type_deprecated', field: 'type' }],
    ['a built-in without schema', 'booking.created', { anything: 1 }, before, null],
  ])('%s', (_, type, data, now, expected) => {
    const refusal = eventRefusal(catalog, { type, data }, now)
    if (expected === null) expect(refusal).toBeNull()
    else expect(refusal).toMatchObject(expected as object)
  })
  it('a deprecated type carries a warning; others none', () => {
    expect(eventWarning(catalog, 'order.legacy')).toMatch(/^event type "order.legacy" is deprecated since 2030-01-01T00:00:00.000Z \(use order.created\); refused from 2030-03-01/)
    expect(eventWarning(catalog, 'order.created')).toBeNull()
  })
})
