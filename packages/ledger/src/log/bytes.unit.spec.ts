import { describe, expect, it } from 'vitest'
import { boundedInteger, decodeBase64, MAX_UINT64, parseDecimal } from './bytes.js'

describe('decodeBase64 (RFC 4648 §4, canonical only)', () => {
  it.each([
    ['', ''],
    ['AA==', '00'],
    ['AAA=', '0000'],
    ['AAAA', '000000'],
    ['+/+/', 'fbffbf'],
  ])('decodes %j', (text, hex) => {
    expect(Buffer.from(decodeBase64(text)!).toString('hex')).toBe(hex)
  })

  it.each([
    ['missing padding', 'AA'],
    ['missing one padding', 'AAA'],
    ['too much padding', 'AA==='],
    ['padding after a full quantum', 'AAAA='],
    ['padding in the middle', 'AA==AAAA'],
    ['nonzero unused bits (one pad)', 'AAB='],
    ['nonzero unused bits (two pads)', 'AB=='],
    ['url-safe alphabet', 'AA-_'],
    ['whitespace', 'AAAA AAAA'],
    ['a newline', 'AAAA\n'],
    ['a tab', '\tAAAA'],
    ['not base64 at all', 'héllo'],
  ])('refuses %s', (_, text) => {
    expect(decodeBase64(text)).toBeNull()
  })
})

describe('decimals and integers', () => {
  it.each([
    ['0', 0n],
    ['1', 1n],
    ['20852163', 20852163n],
    ['18446744073709551615', MAX_UINT64],
  ])('parses %s', (text, value) => {
    expect(parseDecimal(text, MAX_UINT64)).toBe(value)
  })

  it.each(['', '00', '01', '-1', '+1', ' 1', '1 ', '1.0', '1e3', '0x10', '١', '18446744073709551616', '99999999999999999999999'])('refuses %j', (text) => {
    expect(parseDecimal(text, MAX_UINT64)).toBeNull()
  })

  it.each([
    [0, 0n],
    [Number.MAX_SAFE_INTEGER, BigInt(Number.MAX_SAFE_INTEGER)],
    [MAX_UINT64, MAX_UINT64],
  ])('bounds %s', (value, want) => {
    expect(boundedInteger(value, MAX_UINT64)).toBe(want)
  })

  it.each([-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 64, -1n, MAX_UINT64 + 1n])('refuses %s', (value) => {
    expect(boundedInteger(value, MAX_UINT64)).toBeNull()
  })
})
