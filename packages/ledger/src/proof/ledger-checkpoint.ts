import {
  createHash,
  createPrivateKey,
  createPublicKey,
  type KeyObject,
  randomBytes,
  sign,
  verify,
} from 'node:crypto'
import { canonicalJson } from '@hookledger/core'

/**
 * Signed checkpoints of the ledger (`hookledger.checkpoint.v1`). Each checkpoint seals the rows
 * appended since the previous one: their Merkle root, the chain head after them, running
 * counts, and the hash of the previous checkpoint, all under an Ed25519 signature, so a copy
 * of the public key is enough to check an export or a receipt offline.
 *
 * Signed message: the UTF-8 of `"hookledger.checkpoint.v1\n"` followed by the canonical JSON
 * (canonical-json.ts) of the object of exactly these members, so extra properties a store
 * or file adds are not signed and do not break verification:
 *
 *     seq, first, last, count, total, chain_hash, merkle_root, prev_checkpoint_hash,
 *     created_at, key_id            (first and last: null or exactly {tx_id, position})
 *     snapshot                      (only when the checkpoint carries a projection snapshot:
 *                                    {seq, before_position, horizon, digest, endpoints,
 *                                    deliveries}; absent otherwise, so checkpoints from before
 *                                    snapshots existed verify unchanged)
 *
 * for example (keys sorted, no whitespace, one line after the prefix; hashes shortened here,
 * the unit spec pins a whole message):
 *
 *     hookledger.checkpoint.v1
 *     {"chain_hash":"…","count":2,"created_at":"2026-12-01T09:00:00.000Z",
 *      "first":{"position":"1","tx_id":"700"},"key_id":"…","last":{"position":"2",
 *      "tx_id":"701"},"merkle_root":"…","prev_checkpoint_hash":"000…000","seq":1,"total":2}
 *
 * Hashes are lowercase hex; created_at is signed as text, so it must be stored as the text
 * that was signed. The checkpoint hash (prev_checkpoint_hash of the next one) is SHA-256 of
 * the message bytes, signature excluded.
 *
 * Keys: secret `hlsk_` + base64url (no padding) of the 32-byte Ed25519 seed; public key
 * `hlpk_` + base64url of the 32 raw bytes; key id the first 16 hex digits of SHA-256 of the
 * raw public key. Signatures are standard base64 of the 64-byte Ed25519 signature.
 */

/** One signed checkpoint, as stored and exported. */
export interface LedgerCheckpoint {
  /** 1, 2, 3 … */
  readonly seq: number
  /** First row of this checkpoint (null if it sealed no new rows). */
  readonly first: ChainRowRef | null
  /** Last row sealed so far (cumulative head; null only if the ledger is empty). */
  readonly last: ChainRowRef | null
  /** Rows sealed by THIS checkpoint. */
  readonly count: number
  /** Rows sealed by all checkpoints up to and including this one. */
  readonly total: number
  /** Hex: chain head after `last` (CHAIN_GENESIS hex when empty). */
  readonly chain_hash: string
  /** Hex: root over this checkpoint's rows' leaf hashes, in chain order. */
  readonly merkle_root: string
  /** Hex SHA-256 of the previous checkpoint's message bytes (64 zeros for seq 1). */
  readonly prev_checkpoint_hash: string
  /** ISO-8601 from the injected clock. */
  readonly created_at: string
  /** Id of the signing key (ledgerKeyId of its public key). */
  readonly key_id: string
  /** Base64 Ed25519 signature of checkpointMessage(cp). */
  readonly signature: string
  /** The projection snapshot this checkpoint signs, if any (ledger-snapshot-digest.ts). */
  readonly snapshot?: CheckpointSnapshot | null
}

/**
 * A projection snapshot as a checkpoint signs it: every ledger entry below `before_position`
 * folded into the projections, whose rows hash to `digest`. `horizon` (a tx_id) is the oldest
 * transaction running when the position was cut: every row at or after `before_position` has a
 * tx_id at or above it.
 */
export interface CheckpointSnapshot {
  readonly seq: number
  readonly before_position: string
  readonly horizon: string
  readonly digest: string
  readonly endpoints: number
  readonly deliveries: number
}

/** A row's place in the chain order. */
export interface ChainRowRef {
  readonly tx_id: string
  readonly position: string
}

/** A checkpoint's fields before signing. */
export type UnsignedLedgerCheckpoint = Omit<LedgerCheckpoint, 'signature'>

/** The key a sealer signs with, parsed from its secret text. */
export interface LedgerSigningKey {
  readonly privateKey: KeyObject
  /** `hlpk_…`, for parseLedgerPublicKey. */
  readonly publicKey: string
  readonly keyId: string
}

/** prev_checkpoint_hash of the first checkpoint. */
export const CHECKPOINT_GENESIS_HASH = '0'.repeat(64)

const MESSAGE_PREFIX = 'hookledger.checkpoint.v1\n'
const SECRET_PREFIX = 'hlsk_'
const PUBLIC_KEY_PREFIX = 'hlpk_'
const ED25519_BYTES = 32
const SIGNATURE_BYTES = 64
// DER wrappers of a raw Ed25519 seed (RFC 8410 PKCS#8) and public key (SPKI), so node:crypto
// takes the raw bytes without a PEM round trip.
const PKCS8_SEED_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex')
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex')

const HEX_32 = /^[0-9a-f]{64}$/
const CANONICAL_DECIMAL = /^(0|[1-9][0-9]*)$/
const ISO_UTC = /^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?Z$/
const utf8 = new TextEncoder()

/** The bytes a checkpoint's signature covers. Throws on a malformed checkpoint. */
export function checkpointMessage(cp: UnsignedLedgerCheckpoint): Uint8Array {
  return utf8.encode(MESSAGE_PREFIX + canonicalJson(signedFields(cp)))
}

/** Hex SHA-256 of checkpointMessage(cp): what the next checkpoint links to. */
export function checkpointHash(cp: UnsignedLedgerCheckpoint): string {
  return createHash('sha256').update(checkpointMessage(cp)).digest('hex')
}

/** The key id of a raw public key: the first 16 hex digits of its SHA-256. */
export function ledgerKeyId(publicKey: Uint8Array): string {
  return createHash('sha256').update(publicKey).digest('hex').slice(0, 16)
}

/** A fresh signing key: `hlsk_` + base64url of a random 32-byte seed, with its public half. */
export function generateLedgerSigningKey(): { secret: string; publicKey: string; keyId: string } {
  const secret = SECRET_PREFIX + randomBytes(ED25519_BYTES).toString('base64url')
  const { publicKey, keyId } = parseLedgerSigningKey(secret)
  return { secret, publicKey, keyId }
}

/**
 * The signing key of an `hlsk_` secret. Surrounding whitespace (a file's trailing newline) is
 * ignored. Throws on bad input; errors never echo the secret.
 */
export function parseLedgerSigningKey(secret: string): LedgerSigningKey {
  const seed = decodePrefixed(secret, SECRET_PREFIX, 'ledger signing key')
  const privateKey = createPrivateKey({
    key: Buffer.concat([PKCS8_SEED_PREFIX, seed]),
    format: 'der',
    type: 'pkcs8',
  })
  const spki = createPublicKey(privateKey).export({ format: 'der', type: 'spki' })
  const raw = new Uint8Array(spki.subarray(SPKI_PREFIX.length))
  return Object.freeze({
    privateKey,
    publicKey: PUBLIC_KEY_PREFIX + Buffer.from(raw).toString('base64url'),
    keyId: ledgerKeyId(raw),
  })
}

/** The raw 32 bytes of an `hlpk_` public key. Throws on bad input. */
export function parseLedgerPublicKey(text: string): Uint8Array {
  return decodePrefixed(text, PUBLIC_KEY_PREFIX, 'ledger public key')
}

/** Signs `cp` with `key`, setting key_id to the key's id. Throws on a malformed checkpoint. */
export function signCheckpoint(
  key: LedgerSigningKey,
  cp: Omit<LedgerCheckpoint, 'signature' | 'key_id'>,
): LedgerCheckpoint {
  const unsigned = signedFields({ ...cp, key_id: key.keyId })
  return { ...unsigned, signature: signLedgerMessage(key, checkpointMessage(unsigned)) }
}

/** Standard base64 of the Ed25519 signature of `message` by `key` (checkpoints, key hand-overs). */
export function signLedgerMessage(key: LedgerSigningKey, message: Uint8Array): string {
  return sign(null, message, key.privateKey).toString('base64')
}

/**
 * Whether `signature` (standard base64) is `publicKey`'s (raw 32 bytes) Ed25519 signature of
 * `message`. False, never a throw, on anything malformed.
 */
export function verifyLedgerSignature(message: Uint8Array, signature: unknown, publicKey: Uint8Array): boolean {
  try {
    if (!(publicKey instanceof Uint8Array) || publicKey.length !== ED25519_BYTES) return false
    const bytes = decodeSignature(signature)
    if (bytes === null) return false
    const key = createPublicKey({ key: Buffer.concat([SPKI_PREFIX, publicKey]), format: 'der', type: 'spki' })
    return verify(null, message, key, bytes)
  } catch {
    return false
  }
}

/**
 * Whether `cp` carries a valid signature by `publicKey` (raw 32 bytes) and names that key in
 * key_id. False, never a throw, on anything malformed: checkpoints come from files too.
 */
export function verifyCheckpointSignature(cp: LedgerCheckpoint, publicKey: Uint8Array): boolean {
  try {
    if (!(publicKey instanceof Uint8Array) || publicKey.length !== ED25519_BYTES) return false
    if (cp.key_id !== ledgerKeyId(publicKey)) return false
    return verifyLedgerSignature(checkpointMessage(cp), cp.signature, publicKey)
  } catch {
    return false
  }
}

/** Exactly the signed members, validated; the one place the member list is written down. */
function signedFields(cp: UnsignedLedgerCheckpoint): UnsignedLedgerCheckpoint {
  if (typeof cp !== 'object' || cp === null) throw new Error('checkpoint must be an object')
  if (!Number.isSafeInteger(cp.seq) || cp.seq < 1) {
    throw new Error('checkpoint seq must be a positive integer')
  }
  for (const field of ['count', 'total'] as const) {
    if (!Number.isSafeInteger(cp[field]) || cp[field] < 0) {
      throw new Error(`checkpoint ${field} must be a non-negative integer`)
    }
  }
  for (const field of ['chain_hash', 'merkle_root', 'prev_checkpoint_hash'] as const) {
    if (typeof cp[field] !== 'string' || !HEX_32.test(cp[field])) {
      throw new Error(`checkpoint ${field} must be 64 lowercase hex digits`)
    }
  }
  if (typeof cp.created_at !== 'string' || !ISO_UTC.test(cp.created_at)) {
    throw new Error('checkpoint created_at must be an ISO-8601 UTC timestamp')
  }
  if (typeof cp.key_id !== 'string' || cp.key_id.length === 0) {
    throw new Error('checkpoint key_id must be a non-empty string')
  }
  const fields: UnsignedLedgerCheckpoint = {
    seq: cp.seq,
    first: rowRef(cp.first, 'first'),
    last: rowRef(cp.last, 'last'),
    count: cp.count,
    total: cp.total,
    chain_hash: cp.chain_hash,
    merkle_root: cp.merkle_root,
    prev_checkpoint_hash: cp.prev_checkpoint_hash,
    created_at: cp.created_at,
    key_id: cp.key_id,
  }
  return cp.snapshot === undefined || cp.snapshot === null ? fields : { ...fields, snapshot: snapshotFields(cp.snapshot) }
}

function snapshotFields(s: CheckpointSnapshot): CheckpointSnapshot {
  if (typeof s !== 'object' || s === null) throw new Error('checkpoint snapshot must be an object')
  if (!Number.isSafeInteger(s.seq) || s.seq < 1) throw new Error('checkpoint snapshot seq must be a positive integer')
  for (const field of ['before_position', 'horizon'] as const) {
    if (typeof s[field] !== 'string' || !CANONICAL_DECIMAL.test(s[field])) {
      throw new Error(`checkpoint snapshot ${field} must be a decimal string`)
    }
  }
  if (typeof s.digest !== 'string' || !HEX_32.test(s.digest)) throw new Error('checkpoint snapshot digest must be 64 lowercase hex digits')
  for (const field of ['endpoints', 'deliveries'] as const) {
    if (!Number.isSafeInteger(s[field]) || s[field] < 0) throw new Error(`checkpoint snapshot ${field} must be a non-negative integer`)
  }
  return {
    seq: s.seq,
    before_position: s.before_position,
    horizon: s.horizon,
    digest: s.digest,
    endpoints: s.endpoints,
    deliveries: s.deliveries,
  }
}

function rowRef(ref: ChainRowRef | null, name: string): ChainRowRef | null {
  if (ref === null) return null
  if (
    typeof ref !== 'object' ||
    typeof ref.tx_id !== 'string' ||
    typeof ref.position !== 'string' ||
    !CANONICAL_DECIMAL.test(ref.tx_id) ||
    !CANONICAL_DECIMAL.test(ref.position)
  ) {
    throw new Error(`checkpoint ${name} must be null or {tx_id, position} as decimal strings`)
  }
  return { tx_id: ref.tx_id, position: ref.position }
}

/** Strict base64url of exactly 32 bytes: Buffer.from would skip bad characters silently. */
function decodePrefixed(text: string, prefix: string, what: string): Uint8Array {
  if (typeof text !== 'string') throw new Error(`${what} must be a string`)
  if (!text.startsWith(prefix)) throw new Error(`${what} must start with "${prefix}"`)
  const encoded = text.slice(prefix.length).trim()
  const bytes = Buffer.from(encoded, 'base64url')
  if (
    !/^[A-Za-z0-9_-]*$/.test(encoded) ||
    bytes.length !== ED25519_BYTES ||
    bytes.toString('base64url') !== encoded
  ) {
    throw new Error(
      `${what} must be "${prefix}" + unpadded base64url of ${ED25519_BYTES} bytes`,
    )
  }
  return new Uint8Array(bytes)
}

function decodeSignature(text: unknown): Buffer | null {
  if (typeof text !== 'string' || !/^[A-Za-z0-9+/]{86}==$/.test(text)) return null
  const bytes = Buffer.from(text, 'base64')
  return bytes.length === SIGNATURE_BYTES && bytes.toString('base64') === text ? bytes : null
}
