import { describe, expect, it } from 'vitest'
import { decideLedgerSigningKey, type LedgerSigningKeyDecision, type LedgerSigningKeyFacts } from './ledger-signing-key-decision.js'

const A = 'aaaaaaaaaaaaaaaa'
const B = 'bbbbbbbbbbbbbbbb'
const C = 'cccccccccccccccc'
const X = 'xxxxxxxxxxxxxxxx'
const AB = { from: A, to: B }
const BC = { from: B, to: C }
const AC = { from: A, to: C }

describe('decideLedgerSigningKey: what a sealing process does with the key it found', () => {
  it.each<[string, LedgerSigningKeyFacts, LedgerSigningKeyDecision]>([
    ['no key, no checkpoint: the first sealer makes it', { keyId: null, lastCheckpointKeyId: null, handOvers: [] }, { action: 'generate' }],
    ['no key, no checkpoint, stray hand-overs: still the first', { keyId: null, lastCheckpointKeyId: null, handOvers: [AB] }, { action: 'generate' }],
    ['a key, no checkpoint yet: used', { keyId: A, lastCheckpointKeyId: null, handOvers: [] }, { action: 'use' }],
    ['the key the last checkpoint names: used', { keyId: A, lastCheckpointKeyId: A, handOvers: [] }, { action: 'use' }],
    ['no key while a checkpoint exists: refused, never made anew', { keyId: null, lastCheckpointKeyId: A, handOvers: [] }, { action: 'refuse', reason: 'missing', expectedKeyIds: [A] }],
    ['another key than the last checkpoint names: refused', { keyId: X, lastCheckpointKeyId: A, handOvers: [] }, { action: 'refuse', reason: 'mismatch', expectedKeyIds: [A] }],
    ['the successor, before it signed anything: used', { keyId: B, lastCheckpointKeyId: A, handOvers: [AB] }, { action: 'use' }],
    ['the successor of a successor: used', { keyId: C, lastCheckpointKeyId: A, handOvers: [AB, BC] }, { action: 'use' }],
    ['the successor once it signed: used', { keyId: B, lastCheckpointKeyId: B, handOvers: [AB] }, { action: 'use' }],
    ['the old key after the hand-over: retired, the successor expected', { keyId: A, lastCheckpointKeyId: A, handOvers: [AB] }, { action: 'refuse', reason: 'retired', expectedKeyIds: [B] }],
    ['the old key after the successor signed: not reachable from it', { keyId: A, lastCheckpointKeyId: B, handOvers: [AB] }, { action: 'refuse', reason: 'mismatch', expectedKeyIds: [B] }],
    ['a retired key with no checkpoint yet: refused', { keyId: A, lastCheckpointKeyId: null, handOvers: [AB] }, { action: 'refuse', reason: 'retired', expectedKeyIds: [B] }],
    ['no key after a hand-over: the successor expected', { keyId: null, lastCheckpointKeyId: A, handOvers: [AB, BC] }, { action: 'refuse', reason: 'missing', expectedKeyIds: [C] }],
    ['two hand-overs from one key: either successor', { keyId: C, lastCheckpointKeyId: A, handOvers: [AB, AC] }, { action: 'use' }],
    ['a hand-over from an unrelated key changes nothing', { keyId: A, lastCheckpointKeyId: A, handOvers: [{ from: X, to: B }] }, { action: 'use' }],
    ['a cycle retires every key', { keyId: A, lastCheckpointKeyId: A, handOvers: [AB, { from: B, to: A }] }, { action: 'refuse', reason: 'retired', expectedKeyIds: [] }],
  ])('%s', (_name, facts, expected) => {
    expect(decideLedgerSigningKey(facts)).toEqual(expected)
  })
})
