/**
 * Byte helpers the log formats share. Internal to this folder (index.ts does not re-export
 * them): their names are too generic to sit in the package's namespace.
 */

/** Standard base64 (RFC 4648 §4), canonical only: padding required, unused bits zero, no whitespace. */
export function decodeBase64(text: string): Uint8Array | null {
  if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(text)) return null
  const bytes = Buffer.from(text, 'base64')
  // Buffer ignores nonzero unused bits; re-encoding tells them apart.
  return bytes.toString('base64') === text ? new Uint8Array(bytes) : null
}

export function encodeBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64')
}

export function hexOf(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex')
}

export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i])
}

export function concatBytes(...parts: Uint8Array[]): Uint8Array {
  return new Uint8Array(Buffer.concat(parts))
}

export function utf8(text: string): Uint8Array {
  return new Uint8Array(Buffer.from(text, 'utf8'))
}

/** ASCII decimal with no leading zeroes (`0` for zero), as every C2SP number is written. */
export const CANONICAL_DECIMAL = /^(?:0|[1-9][0-9]*)$/

/** The largest uint64: tree sizes and indexes are uint64 in every tlog implementation. */
export const MAX_UINT64 = 2n ** 64n - 1n

/** `value` as a bigint in [0, max], or null (a number must be a safe integer). */
export function boundedInteger(value: bigint | number, max: bigint): bigint | null {
  if (typeof value === 'number' && !Number.isSafeInteger(value)) return null
  const n = BigInt(value)
  return n >= 0n && n <= max ? n : null
}

/** A canonical decimal in [0, max] as a bigint, or null. */
export function parseDecimal(text: string, max: bigint): bigint | null {
  if (!CANONICAL_DECIMAL.test(text) || text.length > 20) return null
  const n = BigInt(text)
  return n <= max ? n : null
}
