import { describe, expect, it } from 'vitest'
import {
  MAX_RESPONSE_HEADERS,
  MAX_RESPONSE_HEADERS_BYTES,
  MAX_RESPONSE_HEADER_VALUE,
  keptResponseHeaders,
} from './response-headers.js'

describe('keptResponseHeaders', () => {
  const cases: [string, Record<string, string | string[] | undefined>, Record<string, string>][] = [
    ['keeps ordinary headers, names lower-cased', { 'Content-Type': 'text/plain', 'x-request-id': 'r1' }, { 'content-type': 'text/plain', 'x-request-id': 'r1' }],
    ['drops hop-by-hop, date and set-cookie', { connection: 'keep-alive', 'keep-alive': 'timeout=5', date: 'Thu', 'set-cookie': ['a=1'], 'transfer-encoding': 'chunked', server: 'x' }, { server: 'x' }],
    ['joins repeated values', { vary: ['accept', 'origin'] }, { vary: 'accept, origin' }],
    ['skips undefined values', { a: undefined, b: '1' }, { b: '1' }],
    ['cuts a long value', { 'x-long': 'v'.repeat(1000) }, { 'x-long': 'v'.repeat(MAX_RESPONSE_HEADER_VALUE) }],
  ]
  it.each(cases)('%s', (_, raw, expected) => {
    expect(keptResponseHeaders(raw)).toEqual(expected)
  })

  it(`keeps at most ${MAX_RESPONSE_HEADERS} headers`, () => {
    const raw = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`x-h${i}`, 'v']))
    expect(Object.keys(keptResponseHeaders(raw))).toHaveLength(MAX_RESPONSE_HEADERS)
  })

  it(`keeps at most ${MAX_RESPONSE_HEADERS_BYTES} bytes of names and values`, () => {
    const raw = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`x-h${i}`, 'v'.repeat(200)]))
    const kept = keptResponseHeaders(raw)
    const bytes = Object.entries(kept).reduce((n, [k, v]) => n + k.length + v.length, 0)
    expect(bytes).toBeLessThanOrEqual(MAX_RESPONSE_HEADERS_BYTES)
    expect(Object.keys(kept)).toHaveLength(5) // 5 × 204 = 1020
  })
})
