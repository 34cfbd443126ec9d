import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OPERATIONS } from '@hookledger/ops'
import { fanoutRun } from '@hookledger/store'
import { testDatabase, type TestDatabase, dbFingerprint, testApi, type TestApi } from '@hookledger/testkit'

/**
 * ≥ 2,000 malformed requests across every route, each built to be refused: zero 5xx, every
 * answer `application/problem+json`, and the database exactly as it was after each one.
 * Deterministic: a seeded PRNG; a failure names the seed and the request.
 */
// HOOKLEDGER_FUZZ_SEED explores other seeds; the default keeps CI deterministic.
const SEED = Number(process.env['HOOKLEDGER_FUZZ_SEED'] ?? 0x5eed_4)
const REQUESTS = 3600

/** mulberry32: small, fast, good enough to pick cases. */
function prng(seed: number) {
  let a = seed >>> 0
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const int = (n: number) => Math.floor(next() * n)
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!
  return { next, int, pick }
}
type Rng = ReturnType<typeof prng>

/** Unicode that tends to break things: astral, RTL, combining, zero-width, controls, quotes. */
const NASTY = [
  'é',
  '漢',
  '😀',
  '\u202e',
  'e\u0301',
  '\u200b',
  '\ufeff',
  '\u0007',
  '"',
  "'",
  '\\',
  '%',
  '/',
  '..',
  '<',
  '{',
  '\n',
  '\t',
  'ǅ',
  'ß',
]
/** At least `length` code points (zod's `max` counts code points, not UTF-16 units). */
function nastyString(r: Rng, length: number): string {
  let s = ''
  let codePoints = 0
  while (codePoints < length) {
    const piece = r.next() < 0.5 ? r.pick(NASTY) : String.fromCharCode(33 + r.int(94))
    s += piece
    codePoints += [...piece].length
  }
  return s
}

interface Field {
  readonly kind: 'string' | 'array' | 'bool' | 'iso' | 'record'
  readonly required?: boolean
  readonly nullable?: boolean
  readonly max?: number
  /** Values of the right type that are still invalid (format, unknown, blocked…). */
  readonly invalid?: readonly unknown[]
}

interface Route {
  readonly name: string
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  readonly path: (id: string) => string
  /** What `:id` is: a UUID, an owner-chosen id, or none. */
  readonly idKind: 'uuid' | 'name' | 'none'
  /** The valid id of owner A's resource. */
  readonly id: () => string
  /** A put route creates whatever valid id it is given: only malformed ids refuse. */
  readonly creates?: boolean
  readonly token: () => string
  readonly body?: () => Record<string, unknown>
  readonly fields?: Record<string, Field>
  /** Query parameters the route knows, with values that must be refused. */
  readonly badQuery?: Record<string, readonly string[]>
  /** Set when the route refuses its base request unless a parameter is given (ledger.audit). */
  readonly baseQuery?: string
}

let database: TestDatabase
let api: TestApi
const t = {} as Record<'a' | 'aPublish' | 'operator' | 'b', string>
const ids = {} as { endpoint: string; delivery: string; bEndpoint: string }

const LIMIT_BAD = ['0', '-1', '201', '99999999999', 'abc', '', '1.5', 'NaN', '１０']
const CURSOR_BAD = [
  'x',
  '!!!!',
  'a'.repeat(600),
  Buffer.from('[1,2]').toString('base64url'),
  Buffer.from('["not a date","00000000-0000-0000-0000-000000000000"]').toString('base64url'),
  Buffer.from('["2026-01-01T00:00:00Z","not-a-uuid"]').toString('base64url'),
  Buffer.from('{"__proto__":1}').toString('base64url'),
  '%00',
]
const GLOBS_BAD: unknown[] = [
  [],
  ['book*'],
  ['nothing.here'],
  ['a'.repeat(201)],
  Array(65).fill('*'),
  [null],
  [7],
  'booking.*',
  [''],
]

/** The routes added since the first fuzz round: every op the registry serves over HTTP is here. */
const MORE_ROUTES = (): Route[] => [
  { name: 'deliveries.list', method: 'GET', path: () => '/api/admin/deliveries', idKind: 'none', id: () => '', token: () => t.a,
    badQuery: { limit: LIMIT_BAD, cursor: CURSOR_BAD, state: ['bogus', ''], event_type: ['', 'x'.repeat(201)], endpoint_id: ['nope', '1'], since: ['yesterday', '2026-13-01T00:00:00Z'], until: ['x'] } },
  { name: 'deliveries.redeliver', method: 'POST', path: (id) => `/api/admin/deliveries/${id}/redeliver`, idKind: 'uuid', id: () => ids.delivery, token: () => t.a, body: () => ({}), fields: {} },
  { name: 'webhooks.receipt', method: 'GET', path: (id) => `/api/admin/deliveries/${id}/receipt`, idKind: 'uuid', id: () => ids.delivery, token: () => t.a, badQuery: {} },
  { name: 'webhooks.stats', method: 'GET', path: (id) => `/api/admin/webhooks/${id}/stats`, idKind: 'uuid', id: () => ids.endpoint, token: () => t.a, badQuery: { window: ['1y', '', '24H'] } },
  { name: 'events.explain', method: 'GET', path: (id) => `/api/admin/events/${id}/explain`, idKind: 'name', id: () => 'evt_a', token: () => t.a, badQuery: {} },
  { name: 'webhooks.recover', method: 'POST', path: (id) => `/api/admin/webhooks/${id}/recover`, idKind: 'uuid', id: () => ids.endpoint, token: () => t.a,
    body: () => ({ since: new Date(Date.now() - 3_600_000).toISOString(), dry_run: true }),
    fields: {
      since: { kind: 'iso', required: true, invalid: ['yesterday', '2026-02-30T00:00:00Z', '1999-01-01T00:00:00Z'] },
      until: { kind: 'iso', invalid: ['2000-01-01T00:00:00Z', 'later'] },
      dry_run: { kind: 'bool' },
      cursor: { kind: 'string', max: 512, invalid: ['x', '!!!'] },
    } },
  { name: 'event_types.list', method: 'GET', path: () => '/api/operator/event_types', idKind: 'none', id: () => '', token: () => t.operator, badQuery: { exposure: ['public', ''] } },
  { name: 'event_types.declare', method: 'POST', path: () => '/api/operator/event_types', idKind: 'none', id: () => '', token: () => t.operator,
    body: () => ({ name: 'fuzz.declared', exposure: 'webhook' }),
    fields: {
      name: { kind: 'string', required: true, max: 200, invalid: ['webhook.test', 'webhook.endpoint.x', 'a..b', 'has space', 'order.created'] },
      exposure: { kind: 'string', required: true, invalid: ['public', ''] },
      description: { kind: 'string', max: 500 },
      group: { kind: 'string', max: 64, invalid: ['', '   '] },
      schema: { kind: 'record', nullable: true, invalid: [{ type: 'no-such-type' }, { $ref: 'http://example.com/s' }] },
    } },
  { name: 'event_types.update', method: 'PATCH', path: (id) => `/api/operator/event_types/${id}`, idKind: 'name', id: () => 'order.created', token: () => t.operator,
    body: () => ({ description: 'changed' }),
    fields: {
      description: { kind: 'string', max: 500 },
      exposure: { kind: 'string', invalid: ['public'] },
      schema: { kind: 'record', nullable: true, invalid: [{ type: 7 }] },
    } },
  { name: 'event_types.deprecate', method: 'POST', path: (id) => `/api/operator/event_types/${id}/deprecate`, idKind: 'name', id: () => 'order.created', token: () => t.operator,
    body: () => ({ reason: 'replaced' }),
    fields: { reason: { kind: 'string', max: 500 }, sunset_at: { kind: 'iso', invalid: ['soon', '2026-13-01T00:00:00Z'] } } },
  { name: 'ledger.export', method: 'GET', path: () => '/api/operator/ledger/export', idKind: 'none', id: () => '', token: () => t.operator, badQuery: { from: ['x', '-1', '1e3'], to: ['y', ''] } },
  { name: 'ledger.public_key', method: 'GET', path: () => '/api/operator/ledger/public_key', idKind: 'none', id: () => '', token: () => t.operator, badQuery: {} },
  { name: 'ledger.checkpoint', method: 'POST', path: () => '/api/operator/ledger/checkpoints', idKind: 'none', id: () => '', token: () => t.operator, body: () => ({}), fields: {} },
  { name: 'ledger.snapshot', method: 'POST', path: () => '/api/operator/ledger/snapshots', idKind: 'none', id: () => '', token: () => t.operator, body: () => ({}), fields: {} },
  { name: 'ledger.verify', method: 'POST', path: () => '/api/operator/ledger/verify', idKind: 'none', id: () => '', token: () => t.operator,
    body: () => ({ chain_only: true }),
    fields: { chain_only: { kind: 'bool' }, full: { kind: 'bool' }, public_key: { kind: 'string', max: 200, invalid: ['nope', 'hlpk_short', 'a+b+c'] } } },
  { name: 'owners.list', method: 'GET', path: () => '/api/operator/owners', idKind: 'none', id: () => '', token: () => t.operator, badQuery: {} },
  { name: 'owners.get', method: 'GET', path: (id) => `/api/operator/owners/${id}`, idKind: 'name', id: () => 'acme', token: () => t.operator, badQuery: {} },
  // A change makes the owner it names: only malformed ids refuse. The limits are numbers (no
  // field kind here): shape, extra fields and ids are fuzzed.
  { name: 'owners.set_limits', method: 'PUT', path: (id) => `/api/operator/owners/${id}/limits`, idKind: 'name', id: () => 'acme', creates: true, token: () => t.operator,
    body: () => ({ weight: 2 }), fields: {} },
  { name: 'owners.suspend', method: 'POST', path: (id) => `/api/operator/owners/${id}/suspend`, idKind: 'name', id: () => 'acme', creates: true, token: () => t.operator,
    body: () => ({ reason: 'fuzzed' }), fields: { reason: { kind: 'string', max: 500, invalid: [''] } } },
  { name: 'owners.resume', method: 'POST', path: (id) => `/api/operator/owners/${id}/resume`, idKind: 'name', id: () => 'acme', creates: true, token: () => t.operator,
    body: () => ({}), fields: {} },
]

const ROUTES: Route[] = [
  {
    name: 'webhooks.list',
    method: 'GET',
    path: () => '/api/admin/webhooks',
    idKind: 'none',
    id: () => '',
    token: () => t.a,
    badQuery: { limit: LIMIT_BAD, cursor: CURSOR_BAD },
  },
  {
    name: 'webhooks.create',
    method: 'POST',
    path: () => '/api/admin/webhooks',
    idKind: 'none',
    id: () => '',
    token: () => t.a,
    body: () => ({ url: 'https://example.com/hook', event_types: ['booking.*'] }),
    fields: {
      url: {
        kind: 'string',
        required: true,
        max: 2048,
        invalid: [
          'ftp://x.example',
          'http://10.0.0.1/x',
          'http://user:pw@example.com',
          'not a url',
          '',
          'http://169.254.169.254/',
        ],
      },
      event_types: { kind: 'array', required: true, invalid: GLOBS_BAD },
      description: { kind: 'string', max: 1000 },
      embed_id: { kind: 'string', nullable: true, max: 200, invalid: ['has space', 'ü', ''] },
    },
  },
  {
    name: 'webhooks.event_types',
    method: 'GET',
    path: () => '/api/admin/webhooks/event_types',
    idKind: 'none',
    id: () => '',
    token: () => t.a,
    badQuery: {},
  },
  {
    name: 'webhooks.get',
    method: 'GET',
    path: (id) => `/api/admin/webhooks/${id}`,
    idKind: 'uuid',
    id: () => ids.endpoint,
    token: () => t.a,
    badQuery: {},
  },
  {
    name: 'webhooks.update',
    method: 'PATCH',
    path: (id) => `/api/admin/webhooks/${id}`,
    idKind: 'uuid',
    id: () => ids.endpoint,
    token: () => t.a,
    body: () => ({ description: 'changed' }),
    fields: {
      url: {
        kind: 'string',
        max: 2048,
        invalid: [
          'javascript:alert(1)',
          'http://127.0.0.1.nip.io@10.0.0.1/',
          'http://[::ffff:10.0.0.1]/',
          'http://10.1.2.3/',
        ],
      },
      description: { kind: 'string', max: 1000 },
      event_types: { kind: 'array', invalid: GLOBS_BAD },
      embed_id: { kind: 'string', nullable: true, max: 200, invalid: ['a/b'] },
      enabled: { kind: 'bool' },
    },
  },
  {
    name: 'webhooks.delete',
    method: 'DELETE',
    path: (id) => `/api/admin/webhooks/${id}`,
    idKind: 'uuid',
    id: () => ids.endpoint,
    token: () => t.a,
    badQuery: {},
  },
  {
    name: 'webhooks.rotate_secret',
    method: 'POST',
    path: (id) => `/api/admin/webhooks/${id}/rotate_secret`,
    idKind: 'uuid',
    id: () => ids.endpoint,
    token: () => t.a,
    body: () => ({}),
    fields: {},
  },
  {
    name: 'webhooks.send_test',
    method: 'POST',
    path: (id) => `/api/admin/webhooks/${id}/send_test`,
    idKind: 'uuid',
    id: () => ids.endpoint,
    token: () => t.a,
    body: () => ({}),
    fields: {},
  },
  {
    name: 'webhooks.deliveries',
    method: 'GET',
    path: (id) => `/api/admin/webhooks/${id}/deliveries`,
    idKind: 'uuid',
    id: () => ids.endpoint,
    token: () => t.a,
    badQuery: {
      limit: LIMIT_BAD,
      cursor: CURSOR_BAD,
      state: ['bogus', 'PENDING', '', 'pending,completed'],
    },
  },
  {
    name: 'webhooks.redeliver',
    method: 'POST',
    path: (id) => `/api/admin/webhooks/${id}/redeliver`,
    idKind: 'uuid',
    id: () => ids.endpoint,
    token: () => t.a,
    body: () => ({}),
    fields: {},
  },
  {
    name: 'webhooks.attempts',
    method: 'GET',
    path: (id) => `/api/admin/deliveries/${id}/attempts`,
    idKind: 'uuid',
    id: () => ids.delivery,
    token: () => t.a,
    badQuery: {},
  },
  {
    name: 'events.publish',
    method: 'POST',
    path: () => '/api/events',
    idKind: 'none',
    id: () => '',
    token: () => t.aPublish,
    body: () => ({ type: 'booking.created', subject: 'booking://1', data: { booking_id: 'b1' } }),
    fields: {
      id: { kind: 'string', max: 128, invalid: ['has.dot', 'space here', 'ü', ''] },
      type: {
        kind: 'string',
        required: true,
        max: 200,
        invalid: ['invoice.paid', 'BOOKING.CREATED', 'booking.*', ''],
      },
      subject: { kind: 'string', required: true, max: 2048, invalid: [''] },
      occurred_at: {
        kind: 'iso',
        invalid: [
          'yesterday',
          '2026-13-01T00:00:00Z',
          '0000-01-01T00:00:00Z',
          '2026-01-01',
          '+275760-09-13T00:00:00Z',
          '1969-12-31T23:59:59Z',
        ],
      },
      data: { kind: 'record' },
    },
  },
  {
    name: 'embeds.put',
    method: 'PUT',
    path: (id) => `/api/admin/embeds/${id}`,
    idKind: 'name',
    creates: true,
    id: () => 'embed_a',
    token: () => t.a,
    body: () => ({ access_code_id: 'code_a' }),
    fields: {
      access_code_id: {
        kind: 'string',
        required: true,
        max: 200,
        invalid: ['code_missing', 'code_b', 'bad id', ''],
      },
    },
  },
  {
    name: 'embeds.get',
    method: 'GET',
    path: (id) => `/api/admin/embeds/${id}`,
    idKind: 'name',
    id: () => 'embed_a',
    token: () => t.a,
    badQuery: {},
  },
  {
    name: 'embeds.delete',
    method: 'DELETE',
    path: (id) => `/api/admin/embeds/${id}`,
    idKind: 'name',
    id: () => 'embed_a',
    token: () => t.a,
    badQuery: {},
  },
  {
    name: 'access_codes.put',
    method: 'PUT',
    path: (id) => `/api/admin/access_codes/${id}`,
    idKind: 'name',
    creates: true,
    id: () => 'code_a',
    token: () => t.a,
    body: () => ({ role_globs: ['wiki://**'] }),
    fields: {
      role_globs: {
        kind: 'array',
        required: true,
        invalid: [[], Array(65).fill('a'), ['x'.repeat(1025)], [''], [1]],
      },
      deny_globs: { kind: 'array', invalid: [Array(65).fill('a'), [''], [false]] },
      reads_published_slice: { kind: 'bool' },
      expires_at: {
        kind: 'iso',
        nullable: true,
        invalid: ['never', '2026-02-30', '99999-01-01T00:00:00Z'],
      },
    },
  },
  {
    name: 'access_codes.get',
    method: 'GET',
    path: (id) => `/api/admin/access_codes/${id}`,
    idKind: 'name',
    id: () => 'code_a',
    token: () => t.a,
    badQuery: {},
  },
  {
    name: 'access_codes.revoke',
    method: 'POST',
    path: (id) => `/api/admin/access_codes/${id}/revoke`,
    idKind: 'name',
    id: () => 'code_a',
    token: () => t.a,
    body: () => ({}),
    fields: {},
  },
  {
    name: 'ledger.read',
    method: 'GET',
    path: () => '/api/operator/ledger',
    idKind: 'none',
    id: () => '',
    token: () => t.operator,
    badQuery: {
      after: ['-1', 'x', '99999999999999999999', '1e3', '', '0x10'],
      cursor: ['abc', '-5'],
      limit: LIMIT_BAD,
      owner_id: ['', 'x'.repeat(201)],
      endpoint_id: ['nope', '0'],
      delivery_id: ['123'],
      event_id: ['a.b', 'ü'],
    },
  },
  {
    name: 'ledger.audit',
    method: 'GET',
    path: () => '/api/operator/ledger/audit',
    idKind: 'none',
    id: () => '',
    token: () => t.operator,
    baseQuery: 'event_id=evt_a',
    badQuery: {
      limit: ['0', '10001', 'x'],
      endpoint_id: ['x'],
      delivery_id: ['1'],
      event_id: ['', 'a b'],
      owner_id: ['', 'o'.repeat(201)],
    },
  },
  {
    name: 'ledger.replay',
    method: 'POST',
    path: () => '/api/operator/ledger/replay',
    idKind: 'none',
    id: () => '',
    token: () => t.operator,
    body: () => ({}),
    fields: {},
  },  ...MORE_ROUTES(),
]

/** One malformed request and the category that made it so. */
interface FuzzRequest {
  readonly category: string
  readonly method: string
  readonly path: string
  readonly headers: Record<string, string>
  readonly body?: string
}

// TRACE and CONNECT cannot even be built as a Request; PROPFIND stands for the unknown ones.
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'PROPFIND']

/** A value of the wrong type, or of the right type but refused, for a field. */
function badValue(r: Rng, field: Field): unknown {
  const wrongTypes: unknown[] = {
    string: [1, true, [], {}, ['x']],
    array: [1, 'x', {}, true, [{}]],
    bool: ['true', 1, 0, 'yes', [], {}],
    iso: [1_700_000_000, true, {}, []],
    record: ['x', 1, [], true, [1, 2]],
  }[field.kind]
  const choices: (() => unknown)[] = [() => r.pick(wrongTypes)]
  if (!field.nullable) choices.push(() => null)
  if (field.invalid?.length)
    choices.push(
      () => r.pick(field.invalid!),
      () => r.pick(field.invalid!),
    )
  if (field.kind === 'string' && field.max) {
    choices.push(() => nastyString(r, field.max! + 1 + r.int(3000)))
    choices.push(
      () => 'ok\u0000nul',
      () => 'lone \ud800 surrogate',
      () => '\udc00',
    )
  }
  if (field.kind === 'array')
    choices.push(
      () => ['ok', 'nul\u0000'],
      () => Array(65 + r.int(100)).fill('booking.*'),
      () => ['x'.repeat(5000)],
    )
  if (field.kind === 'record') {
    choices.push(
      () => ({ blob: nastyString(r, 16_500 + r.int(20_000)) }),
      () => {
        let v: unknown = 1
        for (let i = 0; i < 33 + r.int(60); i++) v = { v }
        return v
      },
      () => ({ ['k\u0000']: 1 }),
      () => ({ x: '\ud83d' }),
    )
  }
  return r.pick(choices)()
}

const encode = (id: string) => encodeURIComponent(id)

function badId(r: Rng, route: Route): string {
  // For a UUID route, a name is malformed; for a name route only characters or length are.
  const uuidOnly =
    route.idKind === 'uuid'
      ? ['abc', '123', randomUUID().replaceAll('-', ''), randomUUID() + 'x', 'ABC:def']
      : []
  const malformed = [
    ...uuidOnly,
    encode('ü' + nastyString(r, r.int(40))),
    '%00',
    '%E0%A4%A',
    '%FF%FE',
    encode("'; drop table endpoints;--"),
    encode('x'.repeat(300 + r.int(5000))),
    encode(' '),
    '..',
  ]
  if (route.creates) return r.pick(malformed)
  const absent =
    route.idKind === 'uuid'
      ? [randomUUID(), ids.bEndpoint, '00000000-0000-0000-0000-000000000000']
      : ['missing_' + r.int(1e6), 'embed_b', 'code_b']
  return r.next() < 0.6 ? r.pick(malformed) : r.pick(absent)
}

function makeRequest(r: Rng, route: Route): FuzzRequest {
  const headers: Record<string, string> = { authorization: `Bearer ${route.token()}` }
  let path = route.path(route.id())
  let query = route.baseQuery ?? ''
  let body = route.body ? JSON.stringify(route.body()) : undefined
  if (body !== undefined) headers['content-type'] = 'application/json'
  const withQuery = () => path + (query ? `?${query}` : '')

  const categories = ['token', 'scope', 'method', 'route']
  if (route.idKind !== 'none') categories.push('id', 'id')
  if (route.body)
    categories.push(
      'json',
      'shape',
      'media',
      'extra',
      'query-on-body',
      'oversize',
      'field',
      'field',
      'field',
      'field',
    )
  if (route.fields && Object.values(route.fields).some((f) => f.invalid?.length))
    categories.push('semantic')
  if (route.badQuery) categories.push('extra', 'query', 'query', 'repeat')
  if (route.fields && Object.values(route.fields).some((f) => f.required))
    categories.push('missing')
  if (route.baseQuery) categories.push('no-filter')
  const category = r.pick(categories)

  switch (category) {
    case 'token': {
      const bad = [
        '',
        'Bearer',
        'Bearer ',
        'Basic dXNlcjpwdw==',
        `Bearer ${route.token()}x`,
        `Bearer ${'a'.repeat(5000)}`,
        `Bearer hl_${nastyString(r, 20).replace(/[^\x20-\x7e]/g, 'q')}`,
        `Token ${route.token()}`,
        `Bearer  ${route.token()}`,
      ]
      const value = r.pick(bad)
      if (value === '') delete headers['authorization']
      else headers['authorization'] = value
      break
    }
    case 'scope': {
      const wrong =
        route.token() === t.operator
          ? [t.a, t.aPublish]
          : route.token() === t.aPublish
            ? [t.operator]
            : [t.aPublish, t.operator]
      headers['authorization'] = `Bearer ${r.pick(wrong)}`
      break
    }
    case 'method': {
      const allowed = new Set(
        ROUTES.filter((x) => x.path(x.id()) === route.path(route.id())).map((x) => x.method),
      )
      // HEAD runs a GET route (without a body), so it is never picked as a wrong method.
      const method = r.pick(METHODS.filter((m) => !allowed.has(m as Route['method'])))
      // A GET cannot carry a body; other methods keep the route's body.
      const keep = body !== undefined && method !== 'GET'
      return { category, method, path: withQuery(), headers, ...(keep ? { body } : {}) }
    }
    case 'route': {
      const suffixes = [
        '/x',
        '/',
        '//',
        '/../../etc/passwd',
        `/${encode(nastyString(r, 10))}`,
        '/%2e%2e/',
      ]
      const prefixes = [
        '/api/admin/webhook',
        '/api/admin/webhooks/x/y/z',
        '/API/admin/webhooks',
        '/api/operator',
        '/api',
        '/api/events/x',
      ]
      path = r.next() < 0.5 ? path + r.pick(suffixes) : r.pick(prefixes)
      if (path === '/api/admin/webhooks/') path += 'x/y'
      break
    }
    case 'id':
      path = route.path(badId(r, route))
      break
    case 'json':
      body = r.pick([
        '{',
        '{"url":',
        '{"a":1,}',
        "{'a':1}",
        '{"a":NaN}',
        '{"a":01}',
        '[',
        'nul',
        '{"a":"\\x"}',
        '{"a":"\\ud800"x}',
        '\u0000',
        '{}{}',
        'undefined',
      ])
      break
    case 'shape':
      body = r.pick(['[]', '[{}]', '1', '"str"', 'null', 'true', '[1,2,3]', '-0'])
      break
    case 'media':
      headers['content-type'] = r.pick([
        'text/plain',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        'application/xml',
        'json',
      ])
      body = body ?? '{}'
      break
    case 'extra': {
      if (body !== undefined) {
        const parsed = JSON.parse(body) as Record<string, unknown>
        const key = r.pick([
          '__proto__',
          'constructor',
          'owner_id',
          'extra',
          nastyString(r, 8),
          'id',
          'secret',
          'prototype',
        ])
        // `id` in a body that also has `:id` in the path is refused as ambiguous; in publish, `id`
        // is a real field, so give it a value that cannot be valid.
        parsed[key] = key === 'id' ? { not: 'an id' } : r.pick([1, 'x', null, { a: 1 }])
        body =
          key === '__proto__'
            ? body.replace(/^\{/, `{"__proto__":${JSON.stringify(parsed[key] ?? 1)},`)
            : JSON.stringify(parsed)
      } else {
        const known = Object.keys(route.badQuery ?? {})
        const name = r.pick(
          ['owner_id', 'x', 'secret', 'debug', nastyString(r, 5)].filter((n) => !known.includes(n)),
        )
        query = [query, `${encode(name)}=1`].filter(Boolean).join('&')
      }
      break
    }
    case 'query-on-body':
      query = `${r.pick(['limit', 'x', 'url'])}=1`
      break
    case 'query': {
      const params = Object.entries(route.badQuery!)
      if (params.length === 0) {
        query = [query, `unknown_${r.int(100)}=${encode(nastyString(r, 5))}`]
          .filter(Boolean)
          .join('&')
      } else {
        const [name, values] = r.pick(params)
        query = [query, `${name}=${encode(r.pick(values))}`].filter(Boolean).join('&')
      }
      break
    }
    case 'repeat': {
      const name = Object.keys(route.badQuery!)[0] ?? 'limit'
      query = [query, `${name}=5&${name}=6`].filter(Boolean).join('&')
      break
    }
    case 'missing': {
      const parsed = JSON.parse(body!) as Record<string, unknown>
      const required = Object.entries(route.fields!)
        .filter(([, f]) => f.required)
        .map(([n]) => n)
      delete parsed[r.pick(required)]
      body = JSON.stringify(parsed)
      break
    }
    case 'no-filter':
      query = r.pick(['', 'limit=5', 'owner_id=acme'])
      break
    case 'oversize': {
      // Past the 64 KiB request limit: refused before parsing.
      const parsed = JSON.parse(body!) as Record<string, unknown>
      const name = Object.keys(route.fields ?? {})[0] ?? 'padding'
      parsed[name] = nastyString(r, 66 * 1024 + r.int(50_000))
      body = JSON.stringify(parsed)
      break
    }
    case 'semantic': {
      const fields = Object.entries(route.fields!).filter(([, f]) => f.invalid?.length)
      const parsed = JSON.parse(body!) as Record<string, unknown>
      const [name, field] = r.pick(fields)
      parsed[name] = r.pick(field.invalid!)
      body = JSON.stringify(parsed)
      break
    }
    case 'field': {
      const fields = Object.entries(route.fields!)
      if (fields.length === 0) {
        body = JSON.stringify({ [nastyString(r, 6)]: 1 })
        break
      }
      const parsed = JSON.parse(body!) as Record<string, unknown>
      const [name, field] = r.pick(fields)
      parsed[name] = badValue(r, field)
      body = JSON.stringify(parsed)
      break
    }
  }
  return {
    category,
    method: route.method,
    path: withQuery(),
    headers,
    ...(body !== undefined ? { body } : {}),
  }
}

beforeAll(async () => {
  database = await testDatabase()
  api = testApi(database.db)
  t.a = await api.token('acme', ['admin', 'publish'])
  t.aPublish = await api.token('acme', ['publish'])
  t.operator = await api.token('', ['operator'])
  t.b = await api.token('globex', ['admin', 'publish'])
  const a = await api.call('POST', '/api/admin/webhooks', {
    token: t.a,
    body: { url: 'https://example.com/a', event_types: ['*'] },
  })
  const b = await api.call('POST', '/api/admin/webhooks', {
    token: t.b,
    body: { url: 'https://example.com/b', event_types: ['*'] },
  })
  ids.endpoint = a.body.endpoint.id
  ids.bEndpoint = b.body.endpoint.id
  await api.call('POST', '/api/events', {
    token: t.a,
    body: { id: 'evt_a', type: 'booking.created', subject: 'booking://a' },
  })
  await fanoutRun(database.db, {
    now: new Date(),
    catalog: api.deps.catalog,
    embedAdmits: async () => false,
    actor: 'system',
  })
  ids.delivery = (
    await api.call('GET', `/api/admin/webhooks/${ids.endpoint}/deliveries`, { token: t.a })
  ).body.data[0].id
  await api.call('PUT', '/api/admin/access_codes/code_a', {
    token: t.a,
    body: { role_globs: ['wiki://**'] },
  })
  await api.call('PUT', '/api/admin/embeds/embed_a', {
    token: t.a,
    body: { access_code_id: 'code_a' },
  })
  await api.call('PUT', '/api/admin/access_codes/code_b', {
    token: t.b,
    body: { role_globs: ['wiki://**'] },
  })
  await api.call('PUT', '/api/admin/embeds/embed_b', {
    token: t.b,
    body: { access_code_id: 'code_b' },
  })
  const declared = await api.call('POST', '/api/operator/event_types', {
    token: t.operator,
    body: { name: 'order.created', exposure: 'webhook', schema: { type: 'object' } },
  })
  expect(declared.status, declared.text).toBe(201)
})
afterAll(() => database.close())

describe('fuzz: malformed requests across every route', () => {
  it('fuzzes every operation the registry serves over HTTP (a new route is added here, or this fails)', () => {
    const served = OPERATIONS.filter((op) => op.http).map((op) => op.name).sort()
    expect(ROUTES.map((r) => r.name).sort()).toEqual(served)
  })

  it(`${REQUESTS} requests, seed ${SEED}: no 5xx, always problem+json, the database unchanged`, async () => {
    const r = prng(SEED)
    const before = await dbFingerprint(database.db)
    const statuses = new Map<number, number>()
    const categories = new Map<string, number>()
    const covered = new Set<string>()
    for (let i = 0; i < REQUESTS; i++) {
      const route = ROUTES[i % ROUTES.length]!
      const req = makeRequest(r, route)
      const res = await app().request(req.path, {
        method: req.method,
        headers: req.headers,
        ...(req.body !== undefined ? { body: req.body } : {}),
      })
      const text = await res.text()
      const what = `#${i} seed ${SEED} ${route.name}/${req.category}: ${req.method} ${req.path.slice(0, 200)} ${(req.body ?? '').slice(0, 200)} → ${res.status} ${text.slice(0, 300)}`
      // A `..` segment resolves to another path, which may be a route of its own
      // (`/api/admin/webhooks/../deliveries` is the delivery log): then a 200 is right.
      const resolved = new URL(req.path, 'http://x').pathname
      const isDeliveryLog = req.method === 'GET' && resolved === '/api/admin/deliveries' && req.path.includes('/../')
      if (isDeliveryLog) {
        expect(res.status, what).toBe(200)
        continue
      }
      expect(res.status, what).toBeGreaterThanOrEqual(400)
      expect(res.status, what).toBeLessThan(500)
      expect(res.headers.get('content-type'), what).toBe('application/problem+json')
      const problem = JSON.parse(text) as { status: number; code: string }
      expect(problem.status, what).toBe(res.status)
      expect(problem.code, what).toMatch(/^[a-z_]+$/)
      expect(text, what).not.toMatch(/\bat .+\.(ts|js):\d+/) // never a stack trace
      expect(await dbFingerprint(database.db), what).toEqual(before)
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
      categories.set(req.category, (categories.get(req.category) ?? 0) + 1)
      covered.add(route.name)
    }
    expect(covered.size).toBe(ROUTES.length)
    // The mix reaches every kind of refusal.
    for (const status of [400, 401, 403, 404, 405, 413, 415, 422])
      expect(statuses.get(status), `status ${status}`).toBeGreaterThan(0)
    console.info(
      'fuzz statuses',
      Object.fromEntries(statuses),
      'categories',
      Object.fromEntries(categories),
    )
  }, 120_000)

  it.each(['nope', 'hlpk_short', 'a+b+c', 'example.com/log+00000000+AQ=='])('ledger.verify with public_key %j: 400 naming the field (it was a 500)', async (key) => {
    const token = await api.token('fuzz', ['operator'])
    const res = await api.call('POST', '/api/operator/ledger/verify', { token, body: { chain_only: true, public_key: key } })
    expect(res.status, res.text).toBe(400)
    expect(res.contentType).toBe('application/problem+json')
    expect(res.body).toMatchObject({ field: 'public_key' })
  })
})

const app = () => api.app
