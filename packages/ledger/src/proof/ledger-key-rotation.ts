import {
  ledgerKeyId,
  type LedgerSigningKey,
  parseLedgerPublicKey,
  signLedgerMessage,
  verifyLedgerSignature,
} from './ledger-checkpoint.js'

/**
 * A hand-over of the ledger signing key (`hookledger.key-rotation.v1`): the old key names its
 * successor, so checkpoints signed by the new key are trusted by whoever trusts the old one.
 *
 * Signed statement: the UTF-8 of
 *
 *     hookledger.key-rotation.v1\n<old key id>\n<new key id>\n<new public key>\n<rotated_at>\n
 *
 * (key ids as in ledger-checkpoint.ts, the new public key as `hlpk_…`, rotated_at ISO-8601 UTC
 * from the injected clock), signed with the OLD key (it hands over) and with the NEW key (its
 * holder has it: nobody can hand over to a key they merely saw). The record also carries the
 * old public key, unsigned: its id is the signed old key id and the old signature checks it, so
 * a verifier that knows only a key id learns the key from the record it trusts.
 */
export interface LedgerKeyRotation {
  readonly format: typeof ROTATION_FORMAT
  readonly old_key_id: string
  readonly old_public_key: string
  readonly new_key_id: string
  readonly new_public_key: string
  readonly rotated_at: string
  /** Standard base64 Ed25519 signatures of the statement. */
  readonly old_signature: string
  readonly new_signature: string
}

/** A rotation whose signatures verify: `from` handed over to `to`. */
export interface LedgerKeyHandOver {
  readonly from: string
  readonly to: string
  /** Raw 32-byte public keys. */
  readonly fromPublicKey: Uint8Array
  readonly toPublicKey: Uint8Array
  readonly rotatedAt: string
}

/** A key verification accepts, and how many hand-overs away from the anchor it is (0: the anchor). */
export interface TrustedLedgerKey {
  readonly publicKey: Uint8Array
  readonly generation: number
}

const ROTATION_FORMAT = 'hookledger.key-rotation.v1'
const ISO_UTC = /^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?Z$/
const utf8 = new TextEncoder()

/** The bytes both signatures of a rotation cover. */
export function keyRotationStatement(r: Pick<LedgerKeyRotation, 'old_key_id' | 'new_key_id' | 'new_public_key' | 'rotated_at'>): Uint8Array {
  return utf8.encode(`${ROTATION_FORMAT}\n${r.old_key_id}\n${r.new_key_id}\n${r.new_public_key}\n${r.rotated_at}\n`)
}

/** The record of `oldKey` handing over to `newKey` at `now`, signed by both. */
export function signKeyRotation(oldKey: LedgerSigningKey, newKey: LedgerSigningKey, now: Date): LedgerKeyRotation {
  if (oldKey.keyId === newKey.keyId) throw new Error('a key cannot hand over to itself')
  const fields = { old_key_id: oldKey.keyId, new_key_id: newKey.keyId, new_public_key: newKey.publicKey, rotated_at: now.toISOString() }
  const statement = keyRotationStatement(fields)
  return {
    format: ROTATION_FORMAT,
    ...fields,
    old_public_key: oldKey.publicKey,
    old_signature: signLedgerMessage(oldKey, statement),
    new_signature: signLedgerMessage(newKey, statement),
  }
}

/**
 * The hand-over a rotation record proves, or why it proves none. Never throws: records come
 * from a file anyone with the data dir could have edited.
 */
export function verifyKeyRotation(record: unknown): { ok: true; handOver: LedgerKeyHandOver } | { ok: false; reason: string } {
  if (typeof record !== 'object' || record === null) return { ok: false, reason: 'not an object' }
  const r = record as Partial<Record<keyof LedgerKeyRotation, unknown>>
  if (r.format !== ROTATION_FORMAT) return { ok: false, reason: `format is not ${ROTATION_FORMAT}` }
  for (const field of ['old_key_id', 'old_public_key', 'new_key_id', 'new_public_key', 'rotated_at', 'old_signature', 'new_signature'] as const) {
    if (typeof r[field] !== 'string') return { ok: false, reason: `${field} is not a string` }
  }
  const fields = r as LedgerKeyRotation
  if (!ISO_UTC.test(fields.rotated_at)) return { ok: false, reason: 'rotated_at is not an ISO-8601 UTC timestamp' }
  let fromPublicKey: Uint8Array
  let toPublicKey: Uint8Array
  try {
    fromPublicKey = parseLedgerPublicKey(fields.old_public_key)
    toPublicKey = parseLedgerPublicKey(fields.new_public_key)
  } catch (err) {
    return { ok: false, reason: (err as Error).message }
  }
  if (ledgerKeyId(fromPublicKey) !== fields.old_key_id) return { ok: false, reason: 'old_public_key is not the key old_key_id names' }
  if (ledgerKeyId(toPublicKey) !== fields.new_key_id) return { ok: false, reason: 'new_public_key is not the key new_key_id names' }
  if (fields.old_key_id === fields.new_key_id) return { ok: false, reason: 'a key cannot hand over to itself' }
  const statement = keyRotationStatement(fields)
  if (!verifyLedgerSignature(statement, fields.old_signature, fromPublicKey)) return { ok: false, reason: 'the old key\'s signature does not verify' }
  if (!verifyLedgerSignature(statement, fields.new_signature, toPublicKey)) return { ok: false, reason: 'the new key\'s signature does not verify' }
  return { ok: true, handOver: { from: fields.old_key_id, to: fields.new_key_id, fromPublicKey, toPublicKey, rotatedAt: fields.rotated_at } }
}

/** The hand-overs among `records` that verify, and the position and reason of each that does not. */
export function verifiedHandOvers(records: readonly unknown[]): { handOvers: LedgerKeyHandOver[]; rejected: { index: number; reason: string }[] } {
  const handOvers: LedgerKeyHandOver[] = []
  const rejected: { index: number; reason: string }[] = []
  records.forEach((record, index) => {
    const verdict = verifyKeyRotation(record)
    if (verdict.ok) handOvers.push(verdict.handOver)
    else rejected.push({ index, reason: verdict.reason })
  })
  return { handOvers, rejected }
}

/**
 * The keys trusted from `anchor` (raw public key): itself, then every key a verified hand-over
 * from a trusted key names, by key id. Trust only flows forward — a successor never vouches for
 * a predecessor — so whoever holds a later key cannot pass off a history signed by a key of
 * their own making as an earlier one.
 */
export function ledgerKeysTrustedFrom(anchor: Uint8Array, handOvers: readonly LedgerKeyHandOver[]): ReadonlyMap<string, TrustedLedgerKey> {
  const trusted = new Map<string, TrustedLedgerKey>([[ledgerKeyId(anchor), { publicKey: Uint8Array.from(anchor), generation: 0 }]])
  // Breadth first: a key's generation is its shortest distance from the anchor.
  let frontier = [ledgerKeyId(anchor)]
  for (let generation = 1; frontier.length > 0; generation++) {
    const next: string[] = []
    for (const h of handOvers) {
      if (!frontier.includes(h.from) || trusted.has(h.to)) continue
      trusted.set(h.to, { publicKey: Uint8Array.from(h.toPublicKey), generation })
      next.push(h.to)
    }
    frontier = next
  }
  return trusted
}

/** Key ids reachable from `keyId` by hand-overs (itself included), and of those the ones handed over. */
export function keyIdsHandedOverFrom(keyId: string, handOvers: readonly Pick<LedgerKeyHandOver, 'from' | 'to'>[]): { reached: ReadonlySet<string>; retired: ReadonlySet<string> } {
  const reached = new Set([keyId])
  for (let grew = true; grew; ) {
    grew = false
    for (const h of handOvers) {
      if (reached.has(h.from) && !reached.has(h.to)) {
        reached.add(h.to)
        grew = true
      }
    }
  }
  const retired = new Set(handOvers.filter((h) => reached.has(h.from)).map((h) => h.from))
  return { reached, retired }
}

/**
 * The key a verification anchors on when the one trusted is `publicKey`: walked back over the
 * hand-overs that lead to it (each signed by the key it hands over to, so the trusted key itself
 * vouches for its predecessor), to the ledger's first key. Trust then flows forward from there
 * (ledgerKeysTrustedFrom), so checkpoints signed before a rotation verify under today's key.
 */
export function ledgerTrustAnchor(publicKey: Uint8Array, handOvers: readonly LedgerKeyHandOver[]): Uint8Array {
  let anchor = publicKey
  const seen = new Set<string>([ledgerKeyId(anchor)])
  for (;;) {
    const id = ledgerKeyId(anchor)
    const before = handOvers.find((h) => h.to === id && !seen.has(h.from))
    if (!before) return anchor
    seen.add(before.from)
    anchor = before.fromPublicKey
  }
}

/**
 * Every key whose signature on the log is accepted when `publicKey` is trusted: walked back to
 * the anchor over the hand-overs that lead to it, then forward from the anchor — the keys before
 * and after the trusted one, as the chain verifier accepts them. Raw 32-byte keys.
 */
export function ledgerKeysAccepted(publicKey: Uint8Array, handOvers: readonly LedgerKeyHandOver[]): Uint8Array[] {
  return [...ledgerKeysTrustedFrom(ledgerTrustAnchor(publicKey, handOvers), handOvers).values()].map((k) => k.publicKey)
}
