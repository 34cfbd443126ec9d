import { describe, expect, it } from 'vitest'
import { canonicalJson } from './canonical-json.js'

/** A double from its IEEE-754 bits, as RFC 8785 Appendix B lists them. */
const fromBits = (hex: string): number =>
  new DataView(Uint8Array.from(Buffer.from(hex, 'hex')).buffer).getFloat64(0, false)

describe('canonicalJson: RFC 8785 examples', () => {
  it('§3.2.2 / §3.2.4: the sample object, literals, numbers and string escapes', () => {
    const input = String.raw`{
      "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
      "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
      "literals": [null, true, false]
    }`
    const expected = String.raw`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`
    const text = canonicalJson(JSON.parse(input))
    expect(text).toBe(expected)
    // §3.2.4: the UTF-8 of "€" is e2 82 ac; everything else in this sample is ASCII.
    expect(Buffer.from(text, 'utf8').toString('hex')).toContain('22e282ac245c7530303066')
  })

  it('§3.2.3: keys sort by UTF-16 code units (the emoji before U+FB33, unlike code points)', () => {
    const input = String.raw`{
      "\u20ac": "Euro Sign",
      "\r": "Carriage Return",
      "\ufb33": "Hebrew Letter Dalet With Dagesh",
      "1": "One",
      "\ud83d\ude00": "Emoji: Grinning Face",
      "\u0080": "Control",
      "\u00f6": "Latin Small Letter O With Diaeresis"
    }`
    expect(canonicalJson(JSON.parse(input))).toBe(
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control",' +
        '"\u00f6":"Latin Small Letter O With Diaeresis","\u20ac":"Euro Sign",' +
        '"\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    )
  })

  it.each([
    ['0000000000000000', '0'],
    ['8000000000000000', '0'], // -0
    ['0000000000000001', '5e-324'],
    ['8000000000000001', '-5e-324'],
    ['7fefffffffffffff', '1.7976931348623157e+308'],
    ['ffefffffffffffff', '-1.7976931348623157e+308'],
    ['4340000000000000', '9007199254740992'],
    ['c340000000000000', '-9007199254740992'],
    ['4430000000000000', '295147905179352830000'],
    ['44b52d02c7e14af5', '9.999999999999997e+22'],
    ['44b52d02c7e14af6', '1e+23'],
    ['44b52d02c7e14af7', '1.0000000000000001e+23'],
    ['444b1ae4d6e2ef4e', '999999999999999700000'],
    ['444b1ae4d6e2ef4f', '999999999999999900000'],
    ['444b1ae4d6e2ef50', '1e+21'],
    ['3eb0c6f7a0b5ed8c', '9.999999999999997e-7'],
    ['3eb0c6f7a0b5ed8d', '0.000001'],
    ['41b3de4355555553', '333333333.3333332'],
    ['41b3de4355555554', '333333333.33333325'],
    ['41b3de4355555555', '333333333.3333333'],
    ['41b3de4355555556', '333333333.3333334'],
    ['41b3de4355555557', '333333333.33333343'],
    ['becbf647612f3696', '-0.0000033333333333333333'],
    ['43143ff3c1cb0959', '1424953923781206.2'],
  ])('Appendix B: the double %s is written %s', (bits, text) => {
    expect(canonicalJson(fromBits(bits))).toBe(text)
  })

  it.each([
    ['7fffffffffffffff', 'NaN'],
    ['7ff0000000000000', 'Infinity'],
    ['fff0000000000000', '-Infinity'],
  ])('Appendix B: the double %s (%s) throws', (bits) => {
    expect(() => canonicalJson(fromBits(bits))).toThrow(/not a JSON number/)
  })
})

describe('canonicalJson: the JSON data model', () => {
  it.each<[string, unknown, string]>([
    ['null', null, 'null'],
    ['true', true, 'true'],
    ['false', false, 'false'],
    ['an empty object', {}, '{}'],
    ['an empty array', [], '[]'],
    ['an empty string', '', '""'],
    ['nested objects, sorted at every level', { b: { y: 1, x: [2, { d: 4, c: 3 }] }, a: null }, '{"a":null,"b":{"x":[2,{"c":3,"d":4}],"y":1}}'],
    ['undefined members dropped, null kept', { a: undefined, b: null, c: 1 }, '{"b":null,"c":1}'],
    ['undefined array elements as null', [1, undefined, 3], '[1,null,3]'],
    ['arrays in their own order', [3, 1, 2], '[3,1,2]'],
    ['control characters in lowercase \\u form', '\u0000\u001f\u007f\b\t\n\f\r', '"\\u0000\\u001f\u007f\\b\\t\\n\\f\\r"'],
    ['"/" not escaped, non-ASCII literal', '/é😀', '"/é😀"'],
    ['a lone surrogate escaped as JSON.stringify does', 'a\ud800b', '"a\\ud800b"'],
    ['keys that need escaping', { 'a"b': 1, '\n': 2 }, '{"\\n":2,"a\\"b":1}'],
    ['a Date through its toJSON', { at: new Date('2026-12-01T09:00:00.123Z') }, '{"at":"2026-12-01T09:00:00.123Z"}'],
    ['a null-prototype object', Object.assign(Object.create(null) as object, { b: 2, a: 1 }), '{"a":1,"b":2}'],
    ['a shared (not cyclic) reference twice', ((x) => [x, x])({ k: 1 }), '[{"k":1},{"k":1}]'],
  ])('writes %s', (_name, value, text) => {
    expect(canonicalJson(value)).toBe(text)
  })

  it('is a fixed point: canonicalising its own parsed output changes nothing', () => {
    const value = { z: [1.5, -0, 1e21, 'x'], a: { '\u00e9': true, e: false }, m: null }
    const once = canonicalJson(value)
    expect(canonicalJson(JSON.parse(once))).toBe(once)
    expect(JSON.parse(once)).toEqual(JSON.parse(JSON.stringify(value)))
  })

  const cyclic: Record<string, unknown> = {}
  cyclic.self = cyclic

  it.each<[string, unknown, RegExp]>([
    ['top-level undefined', undefined, /top-level value is undefined/],
    ['NaN inside an object', { a: Number.NaN }, /NaN is not a JSON number/],
    ['Infinity inside an array', [Number.POSITIVE_INFINITY], /Infinity is not a JSON number/],
    ['a bigint', { a: 1n }, /bigint is not JSON data/],
    ['a function', { f: () => 1 }, /function is not JSON data/],
    ['a symbol', [Symbol('s')], /symbol is not JSON data/],
    ['a Map', new Map([['a', 1]]), /Map is not JSON data/],
    ['a cycle', cyclic, /cyclic/],
  ])('throws on %s', (_name, value, message) => {
    expect(() => canonicalJson(value)).toThrow(message)
  })
})
