/**
 * Canonical JSON in the style of RFC 8785 (JCS): one text per JSON value, so hashes and
 * signatures over it are reproducible by any implementation.
 *
 * - objects: members sorted by key, comparing UTF-16 code units (plain `Array#sort`), as
 *   RFC 8785 §3.2.3 requires; members whose value is `undefined` are dropped, as
 *   `JSON.stringify` drops them;
 * - arrays: in order; an `undefined` element is `null`, as `JSON.stringify` writes it;
 * - strings: escaped exactly as `JSON.stringify` escapes them (RFC 8785 §3.2.2.2: `\b \t \n
 *   \f \r \" \\`, other controls as lowercase `\u00xx`, everything else literal). A lone
 *   surrogate is written as `\udxxx` (well-formed `JSON.stringify`) where RFC 8785 would refuse
 *   it; PostgreSQL text and jsonb cannot hold one, so ledger data never has one;
 * - numbers: `String(n)`, the ECMAScript shortest round-trip form RFC 8785 §3.2.2.3 adopts
 *   (`-0` is `0`); NaN and ±Infinity throw;
 * - no whitespace anywhere.
 *
 * Anything that is not JSON data throws rather than serialising into something ambiguous:
 * bigint, functions, symbols, cycles, and objects that are neither plain nor have `toJSON`
 * (a `Date` is written through its `toJSON`, as `JSON.stringify` would).
 */
export function canonicalJson(value: unknown): string {
  const out = write(value, new Set())
  if (out === undefined) throw new Error('canonical JSON: the top-level value is undefined')
  return out
}

/** `undefined` means "no JSON text" (an `undefined` value), for the caller to drop or null. */
function write(value: unknown, ancestors: Set<object>): string | undefined {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value)
    case 'number':
      if (!Number.isFinite(value)) {
        throw new Error(`canonical JSON: ${String(value)} is not a JSON number`)
      }
      return String(value)
    case 'boolean':
      return value ? 'true' : 'false'
    case 'undefined':
      return undefined
    case 'object':
      if (value === null) return 'null'
      return writeObject(value, ancestors)
    default:
      throw new Error(`canonical JSON: a ${typeof value} is not JSON data`)
  }
}

function writeObject(value: object, ancestors: Set<object>): string | undefined {
  if (ancestors.has(value)) throw new Error('canonical JSON: the value is cyclic')
  if (!Array.isArray(value) && !isPlainObject(value)) {
    const toJSON = (value as { toJSON?: unknown }).toJSON
    if (typeof toJSON !== 'function') {
      throw new Error(`canonical JSON: a ${value.constructor?.name ?? 'object'} is not JSON data`)
    }
    return write(toJSON.call(value), ancestors)
  }
  ancestors.add(value)
  try {
    if (Array.isArray(value)) {
      return `[${value.map((item: unknown) => write(item, ancestors) ?? 'null').join(',')}]`
    }
    const members: string[] = []
    for (const key of Object.keys(value).sort()) {
      const text = write((value as Record<string, unknown>)[key], ancestors)
      if (text !== undefined) members.push(`${JSON.stringify(key)}:${text}`)
    }
    return `{${members.join(',')}}`
  } finally {
    ancestors.delete(value)
  }
}

function isPlainObject(value: object): boolean {
  const proto: unknown = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}
