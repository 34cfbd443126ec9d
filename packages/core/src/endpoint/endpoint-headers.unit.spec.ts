/**
 * The custom header rule (`checkEndpointHeaders`): which names and values an endpoint may send,
 * the limits, secret headers kept on update, and how answers mask them. No database.
 */
import { describe, expect, it } from 'vitest'
import {
  MAX_ENDPOINT_HEADERS,
  MAX_ENDPOINT_HEADERS_BYTES,
  SECRET_HEADER_MASK,
  checkEndpointHeaders,
  maskedEndpointHeaders,
  type EndpointHeaderInput,
} from './endpoint-headers.js'
import { decideEndpointUpdate } from './endpoint-decider.js'
import { evolveEndpoint } from '../model/projections.js'
import { endpointRowFixture } from '@hookledger/testkit/row-fixtures'

type Input = Record<string, EndpointHeaderInput>

describe('checkEndpointHeaders: refused names', () => {
  it.each([
    ['webhook-id'],
    ['Webhook-Signature'],
    ['webhook-anything'],
    ['content-type'],
    ['Content-Length'],
    ['host'],
    ['user-agent'],
    ['authorization'],
    ['Authorization'],
    ['connection'],
    ['keep-alive'],
    ['proxy-authorization'],
    ['Proxy-Connection'],
    ['te'],
    ['trailer'],
    ['transfer-encoding'],
    ['upgrade'],
  ])('%s → header_reserved, naming headers.<name as given>', (name) => {
    const r = checkEndpointHeaders({ [name]: 'x' })
    expect(r).toMatchObject({ ok: false, problem: { code: 'header_reserved', field: `headers.${name}` } })
  })
})

describe('checkEndpointHeaders: names and values', () => {
  const cases: [string, Input, string | null][] = [
    // [what, input, the problem's field (null: accepted)]
    ['a token name and a plain value', { 'x-tenant': 'acme' }, null],
    ['every tchar', { "!#$%&'*+-.^_`|~09AZaz": 'v' }, null],
    ['spaces and tabs inside a value', { 'x-a': 'a b\tc' }, null],
    ['a name with a space', { 'x a': 'v' }, 'headers.x a'],
    ['a name with a colon', { 'x:a': 'v' }, 'headers.x:a'],
    ['a name with a slash', { 'x/a': 'v' }, 'headers.x/a'],
    ['a non-ASCII name', { 'x-é': 'v' }, 'headers.x-é'],
    ['a value with CR LF (header smuggling)', { 'x-a': 'v\r\nx-evil: 1' }, 'headers.x-a'],
    ['a value with a lone LF', { 'x-a': 'v\nw' }, 'headers.x-a'],
    ['a value with NUL', { 'x-a': 'v\u0000' }, 'headers.x-a'],
    ['a value with DEL', { 'x-a': 'v\u007f' }, 'headers.x-a'],
    ['a non-ASCII value', { 'x-a': 'café' }, 'headers.x-a'],
    ['an empty value', { 'x-a': '' }, 'headers.x-a'],
    ['a value with a leading space', { 'x-a': ' v' }, 'headers.x-a'],
    ['a value with a trailing tab', { 'x-a': 'v\t' }, 'headers.x-a'],
    ['the mask sent back as a value', { 'x-a': SECRET_HEADER_MASK }, 'headers.x-a'],
    ['a name given twice in two cases', { 'X-A': '1', 'x-a': '2' }, 'headers.x-a'],
    ['a plain header in object form', { 'x-a': { value: 'v' } }, null],
    ['a secret header', { 'x-api-key': { value: 'k', secret: true } }, null],
    ['a secret header without a value on create', { 'x-api-key': { secret: true } }, 'headers.x-api-key'],
    ['an object without a value, not secret', { 'x-a': {} }, 'headers.x-a'],
  ]
  it.each(cases)('%s', (_, input, field) => {
    const r = checkEndpointHeaders(input)
    if (field === null) expect(r.ok).toBe(true)
    else expect(r).toMatchObject({ ok: false, problem: { code: 'invalid_header', field } })
  })

  it('lower-cases names and splits plain from secret', () => {
    const r = checkEndpointHeaders({ 'X-Tenant': 'acme', 'X-Api-Key': { value: 'sk_live_1', secret: true }, 'x-b': { value: 'b', secret: false } })
    expect(r).toEqual({ ok: true, headers: { plain: { 'x-tenant': 'acme', 'x-b': 'b' }, secret: { 'x-api-key': 'sk_live_1' }, kept: [] } })
  })

  it('never quotes a value in a refusal (it may be a secret)', () => {
    const r = checkEndpointHeaders({ 'x-api-key': { value: 'sk_live_SECRET\r\n', secret: true } })
    expect(r.ok).toBe(false)
    expect(JSON.stringify(r)).not.toContain('sk_live_SECRET')
  })
})

describe('checkEndpointHeaders: limits', () => {
  const many = (n: number): Input => Object.fromEntries(Array.from({ length: n }, (_, i) => [`x-h${i}`, 'v']))
  it.each([
    [`${MAX_ENDPOINT_HEADERS} headers`, many(MAX_ENDPOINT_HEADERS), null],
    [`${MAX_ENDPOINT_HEADERS + 1} headers`, many(MAX_ENDPOINT_HEADERS + 1), 'headers'],
    ['4 KiB of names and values exactly', { 'x-a': 'v'.repeat(MAX_ENDPOINT_HEADERS_BYTES - 3) }, null],
    ['one byte more', { 'x-a': 'v'.repeat(MAX_ENDPOINT_HEADERS_BYTES - 2) }, 'headers'],
    ['spread over two headers', { 'x-a': 'v'.repeat(2048), 'x-b': 'v'.repeat(2048) }, 'headers'],
  ] as [string, Input, string | null][])('%s', (_, input, field) => {
    const r = checkEndpointHeaders(input)
    if (field === null) expect(r.ok).toBe(true)
    else expect(r).toMatchObject({ ok: false, problem: { code: 'invalid_header', field } })
  })

  it('counts a kept secret at the length it holds', () => {
    const keepable = new Map([['x-api-key', MAX_ENDPOINT_HEADERS_BYTES - 'x-api-key'.length]])
    expect(checkEndpointHeaders({ 'x-api-key': { secret: true } }, keepable).ok).toBe(true)
    expect(checkEndpointHeaders({ 'x-api-key': { secret: true }, 'x-b': 'v' }, keepable)).toMatchObject({ ok: false, problem: { field: 'headers' } })
  })
})

describe('checkEndpointHeaders: keeping a secret on update', () => {
  const keepable = new Map([['x-api-key', 9]])
  it.each([
    ['{ secret: true } keeps the held value', { 'X-Api-Key': { secret: true } }, { ok: true, kept: ['x-api-key'] }],
    ['a new value replaces it', { 'x-api-key': { value: 'new', secret: true } }, { ok: true, kept: [] }],
    ['a name the endpoint holds no secret of', { 'x-other': { secret: true } }, { ok: false, field: 'headers.x-other' }],
  ] as [string, Input, { ok: boolean; kept?: string[]; field?: string }][])('%s', (_, input, expected) => {
    const r = checkEndpointHeaders(input, keepable)
    expect(r.ok).toBe(expected.ok)
    if (r.ok) expect(r.headers.kept).toEqual(expected.kept)
    else expect(r.problem.field).toBe(expected.field)
  })
})

describe('answers and the ledger', () => {
  it('mask every secret value and show plain ones', () => {
    expect(maskedEndpointHeaders({ headers: { 'x-tenant': 'acme' }, secret_headers_sealed: { 'x-api-key': 'c2VhbGVk' } })).toEqual({
      'x-tenant': 'acme',
      'x-api-key': SECRET_HEADER_MASK,
    })
  })

  const T0 = new Date('2026-01-01T00:00:00.000Z')
  const T1 = new Date('2026-01-01T00:01:00.000Z')
  it.each([
    ['same headers, same sealed values: no entry', { headers: { 'x-a': '1' }, secret_headers_sealed: { 'x-k': 's1' } }, 0],
    ['a plain value changed', { headers: { 'x-a': '2' }, secret_headers_sealed: { 'x-k': 's1' } }, 1],
    ['a secret resealed', { headers: { 'x-a': '1' }, secret_headers_sealed: { 'x-k': 's2' } }, 1],
    ['all removed', { headers: {}, secret_headers_sealed: {} }, 1],
  ])('update: %s', (_, set, entries) => {
    const row = endpointRowFixture({ headers: { 'x-a': '1' }, secret_headers_sealed: { 'x-k': 's1' } })
    const out = decideEndpointUpdate(row, { headers: set }, T1, 'owner:t')
    expect(out).toHaveLength(entries)
    if (entries === 0) return
    // Both maps travel together and fold back into the row as given.
    expect(out[0]).toMatchObject({ kind: 'endpoint.updated', payload: set })
    expect(evolveEndpoint(row, out[0]!)).toMatchObject(set)
  })

  it('follow_redirects changes only when it differs', () => {
    const row = endpointRowFixture()
    expect(decideEndpointUpdate(row, { follow_redirects: 'same_origin' }, T1, 'owner:t')).toEqual([])
    const [e] = decideEndpointUpdate(row, { follow_redirects: 'none' }, T1, 'owner:t')
    expect(e).toMatchObject({ kind: 'endpoint.updated', payload: { follow_redirects: 'none' } })
    expect(evolveEndpoint(row, e!)?.follow_redirects).toBe('none')
  })

  it('an endpoint.created entry from before the options existed replays to the defaults', () => {
    const row = evolveEndpoint(null, {
      kind: 'endpoint.created',
      occurred_at: T0,
      owner_id: 'o1',
      endpoint_id: '00000000-0000-4000-8000-0000000000e1',
      delivery_id: null,
      event_id: null,
      actor: 'owner:t',
      payload: { url: 'https://a.example/', description: '', event_types: ['*'], embed_id: null, secret_sealed: 'AQ==', secret_key_id: 'k1' },
    })
    expect(row).toMatchObject({ headers: {}, secret_headers_sealed: {}, follow_redirects: 'same_origin' })
  })
})
