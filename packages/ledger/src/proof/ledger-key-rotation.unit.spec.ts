import { describe, expect, it } from 'vitest'
import { parseLedgerPublicKey, parseLedgerSigningKey } from './ledger-checkpoint.js'
import {
  keyIdsHandedOverFrom,
  keyRotationStatement,
  ledgerKeysTrustedFrom,
  ledgerTrustAnchor,
  type LedgerKeyRotation,
  signKeyRotation,
  verifiedHandOvers,
  verifyKeyRotation,
} from './ledger-key-rotation.js'

const key = (fill: number) => parseLedgerSigningKey(`hlsk_${Buffer.alloc(32, fill).toString('base64url')}`)
const K1 = key(21)
const K2 = key(22)
const K3 = key(23)
const STRANGER = key(29)
const AT = new Date('2026-12-01T09:00:00.000Z')
const R12 = signKeyRotation(K1, K2, AT)
const R23 = signKeyRotation(K2, K3, new Date('2027-01-01T09:00:00.000Z'))

describe('the key-rotation statement', () => {
  it('is the format, the old and new key ids, the new public key and the time, one per line', () => {
    expect(new TextDecoder().decode(keyRotationStatement(R12))).toBe(
      `hookledger.key-rotation.v1\n${K1.keyId}\n${K2.keyId}\n${K2.publicKey}\n2026-12-01T09:00:00.000Z\n`,
    )
  })

  it('is signed by both keys and names the old public key', () => {
    expect(R12).toMatchObject({
      format: 'hookledger.key-rotation.v1',
      old_key_id: K1.keyId,
      old_public_key: K1.publicKey,
      new_key_id: K2.keyId,
      new_public_key: K2.publicKey,
      rotated_at: '2026-12-01T09:00:00.000Z',
    })
    expect(R12.old_signature).not.toBe(R12.new_signature)
    expect(verifyKeyRotation(R12)).toEqual({
      ok: true,
      handOver: { from: K1.keyId, to: K2.keyId, fromPublicKey: parseLedgerPublicKey(K1.publicKey), toPublicKey: parseLedgerPublicKey(K2.publicKey), rotatedAt: R12.rotated_at },
    })
  })

  it('a key does not hand over to itself', () => {
    expect(() => signKeyRotation(K1, K1, AT)).toThrow(/itself/)
  })
})

describe('verifyKeyRotation: a record edited or forged proves nothing', () => {
  const forgedBy = (signer: typeof K1) => signKeyRotation(K1, signer, AT).new_signature
  it.each<[string, unknown, RegExp]>([
    ['not an object', 'hookledger.key-rotation.v1', /not an object/],
    ['another format', { ...R12, format: 'hookledger.key-rotation.v2' }, /format/],
    ['a field missing', { ...R12, new_signature: undefined }, /new_signature is not a string/],
    ['a time that is not ISO-8601', { ...R12, rotated_at: 'yesterday' }, /rotated_at/],
    ['a later time', { ...R12, rotated_at: '2026-12-02T09:00:00.000Z' }, /old key's signature does not verify/],
    ['another successor named', { ...R12, new_key_id: K3.keyId, new_public_key: K3.publicKey }, /old key's signature does not verify/],
    ['a successor id that is not its key', { ...R12, new_key_id: K3.keyId }, /new_public_key is not the key new_key_id names/],
    ['an old public key that is not the old key id', { ...R12, old_public_key: STRANGER.publicKey }, /old_public_key is not the key old_key_id names/],
    ['a malformed public key', { ...R12, new_public_key: 'hlpk_nope' }, /ledger public key must be/],
    ['signed by the old key only (no proof the successor exists)', { ...R12, new_signature: R12.old_signature }, /new key's signature does not verify/],
    ['the successor\'s signature by a stranger', { ...R12, new_signature: forgedBy(STRANGER) }, /new key's signature does not verify/],
    ['a stranger handing over from a key it does not hold', { ...signKeyRotation(STRANGER, K2, AT), old_key_id: K1.keyId, old_public_key: K1.publicKey }, /old key's signature does not verify/],
    ['a signature that is not base64', { ...R12, old_signature: '!!' }, /old key's signature does not verify/],
  ])('%s', (_name, record, reason) => {
    const verdict = verifyKeyRotation(record)
    expect(verdict.ok).toBe(false)
    expect(verdict.ok ? '' : verdict.reason).toMatch(reason)
  })

  it('verifiedHandOvers keeps the good ones and says where the bad ones are', () => {
    const { handOvers, rejected } = verifiedHandOvers([R12, { ...R23, rotated_at: '2027-01-02T00:00:00.000Z' } satisfies LedgerKeyRotation, R23])
    expect(handOvers.map((h) => [h.from, h.to])).toEqual([[K1.keyId, K2.keyId], [K2.keyId, K3.keyId]])
    expect(rejected).toEqual([{ index: 1, reason: "the old key's signature does not verify" }])
  })
})

describe('ledgerKeysTrustedFrom: trust flows forward along hand-overs', () => {
  const { handOvers } = verifiedHandOvers([R23, R12])
  const generations = (anchor: typeof K1) => Object.fromEntries([...ledgerKeysTrustedFrom(parseLedgerPublicKey(anchor.publicKey), handOvers)].map(([id, k]) => [id, k.generation]))

  it.each<[string, typeof K1, Record<string, number>]>([
    ['from the first key: every successor, by distance', K1, { [K1.keyId]: 0, [K2.keyId]: 1, [K3.keyId]: 2 }],
    ['from the middle one: it and later keys only', K2, { [K2.keyId]: 0, [K3.keyId]: 1 }],
    ['from the newest: itself alone (a successor never vouches for the past)', K3, { [K3.keyId]: 0 }],
    ['from an unrelated key: itself alone', STRANGER, { [STRANGER.keyId]: 0 }],
  ])('%s', (_name, anchor, expected) => {
    expect(generations(anchor)).toEqual(expected)
  })

  it('carries each key\'s public half', () => {
    const trusted = ledgerKeysTrustedFrom(parseLedgerPublicKey(K1.publicKey), handOvers)
    expect(trusted.get(K3.keyId)?.publicKey).toEqual(parseLedgerPublicKey(K3.publicKey))
  })

  it('keyIdsHandedOverFrom: what a key leads to, and which of those were handed over', () => {
    const ids = keyIdsHandedOverFrom(K1.keyId, handOvers)
    expect([...ids.reached].sort()).toEqual([K1.keyId, K2.keyId, K3.keyId].sort())
    expect([...ids.retired].sort()).toEqual([K1.keyId, K2.keyId].sort())
  })
})

describe('ledgerTrustAnchor: from the key trusted today back to the ledger\'s first', () => {
  const handOvers = verifiedHandOvers([R12, R23]).handOvers
  const pub = (k: typeof K1) => parseLedgerPublicKey(k.publicKey)
  it.each([
    ['the newest key walks back to the first', K3, K1],
    ['a middle key walks back to the first', K2, K1],
    ['the first key is its own anchor', K1, K1],
    ['a key no hand-over leads to is its own anchor', STRANGER, STRANGER],
  ] as const)('%s', (_what, trusted, anchor) => {
    expect(Buffer.from(ledgerTrustAnchor(pub(trusted), handOvers))).toEqual(Buffer.from(pub(anchor)))
  })
  it('a cycle of hand-overs ends (every key once)', () => {
    const cycle = verifiedHandOvers([R12, signKeyRotation(K2, K1, AT)]).handOvers
    expect(() => ledgerTrustAnchor(pub(K2), cycle)).not.toThrow()
  })
})
