import * as crypto from 'node:crypto'

/**
 * SHA-256 for the sealer's hot loop. A row costs five to six digests (chain, segment leaf,
 * commitment, log leaf, interior nodes), and a Hash object per digest cost ~3 µs each there:
 * node's one-shot `crypto.hash` (Node ≥ 20.12) over one buffer is about a third cheaper. Parts are
 * copied into one buffer first (the inputs are small). Results are plain Uint8Array views.
 */

type OneShot = (data: Uint8Array) => Uint8Array

const oneShot: OneShot =
  typeof (crypto as { hash?: unknown }).hash === 'function'
    ? (data) => {
        const out = crypto.hash('sha256', data, 'buffer')
        return new Uint8Array(out.buffer, out.byteOffset, out.length)
      }
    : (data) => {
        const out = crypto.createHash('sha256').update(data).digest()
        return new Uint8Array(out.buffer, out.byteOffset, out.length)
      }

/** SHA-256 of the concatenation of `parts`. */
export function sha256(...parts: readonly Uint8Array[]): Uint8Array {
  if (parts.length === 1) return oneShot(parts[0]!)
  let length = 0
  for (const p of parts) length += p.length
  const joined = Buffer.allocUnsafe(length)
  let at = 0
  for (const p of parts) {
    joined.set(p, at)
    at += p.length
  }
  return oneShot(joined)
}

/** SHA-256(prefix ‖ parts…) for a one-byte domain prefix (RFC 6962's 0x00 leaves, 0x01 nodes). */
export function sha256Prefixed(prefix: number, ...parts: readonly Uint8Array[]): Uint8Array {
  let length = 1
  for (const p of parts) length += p.length
  const joined = Buffer.allocUnsafe(length)
  joined[0] = prefix
  let at = 1
  for (const p of parts) {
    joined.set(p, at)
    at += p.length
  }
  return oneShot(joined)
}
