import { sha256, sha256Prefixed } from '../proof/sha256.js'

/**
 * The RFC 6962 hashing the tree code shares: every node is a SHA-256 digest, an interior node
 * is SHA-256(0x01 ‖ left ‖ right), and the empty tree's root is SHA-256 of nothing. (Leaf hashes,
 * SHA-256(0x00 ‖ entry), are made by whoever appends: the tree code only ever sees them.)
 */

/** Bytes in every hash the tree and its tiles hold. */
export const HASH_BYTES = 32

/** SHA-256(0x01 ‖ left ‖ right). */
export function interiorHash(left: Uint8Array, right: Uint8Array): Uint8Array {
  return sha256Prefixed(0x01, left, right)
}

/** MTH of the empty tree: SHA-256 of the empty string. */
export function emptyTreeHash(): Uint8Array {
  return sha256(new Uint8Array(0))
}

/** Whether `value` is a 32-byte hash (proofs and tiles arrive from outside: checked, not assumed). */
export function isHash(value: unknown): value is Uint8Array {
  return value instanceof Uint8Array && value.length === HASH_BYTES
}

export function equalHashes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/** 2^exponent, exact for every exponent a safe-integer tree can need (no `1 << n`: that is 32-bit). */
export function powerOfTwo(exponent: number): number {
  return 2 ** exponent
}

/** The number of perfect subtrees in a tree of `size` leaves: the 1 bits of `size`, counted arithmetically. */
export function onesInBinary(size: number): number {
  let count = 0
  for (let s = size; s > 0; s = Math.floor(s / 2)) count += s % 2
  return count
}

/** Whether `n` is a non-negative safe integer: every size and index here must be. */
export function isCount(n: unknown): n is number {
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0
}
