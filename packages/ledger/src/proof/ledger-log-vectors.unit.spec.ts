import { describe, expect, it } from 'vitest'
import { formatTlogProof } from '../log/index.js'
import { parseLedgerSigningKey } from './ledger-checkpoint.js'
import { verifyRowTlogProof } from './ledger-receipt.js'
import { ledgerRowBytes, ledgerRowCommitment, logLeafHash, type ChainRow } from './ledger-row-encoding.js'
import { ledgerVerifierKey, signTreeNote } from './ledger-tree-note.js'
import { inclusionProof, merkleRoot } from './merkle-tree.js'

/** The test vectors docs/ledger.md publishes ("The transparency log"): change one, change both. */
const ROW: ChainRow = {
  position: '42', tx_id: '1007', occurred_at: '2026-12-01T09:00:00.123000Z', owner_id: 'own_1', kind: 'endpoint.disabled',
  endpoint_id: '7c9e6679-7425-40de-944b-e07fc1f90ae7', delivery_id: null, event_id: null, payload: { reason: 'manual' }, actor: 'operator',
}
const ROWS: ChainRow[] = [ROW, { ...ROW, position: '43', kind: 'endpoint.enabled', payload: {} }, { ...ROW, position: '44', kind: 'endpoint.deleted', payload: {} }]
const KEY = parseLedgerSigningKey('hlsk_' + Buffer.alloc(32, 7).toString('base64url'))
const ORIGIN = 'example.com/hookledger'
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex')

describe('the published test vectors', () => {
  const leaves = ROWS.map((r) => logLeafHash(ledgerRowCommitment(r)))

  it('a row: its bytes, commitment (the entry) and leaf hash', () => {
    expect(new TextDecoder().decode(ledgerRowBytes(ROW))).toBe(
      '["hookledger.ledger.v1","42","1007","2026-12-01T09:00:00.123000Z","own_1","endpoint.disabled","7c9e6679-7425-40de-944b-e07fc1f90ae7",null,null,{"reason":"manual"},"operator"]',
    )
    expect(hex(ledgerRowCommitment(ROW))).toBe('e461a69a13e2008bf744f078f66a2ab81ca789d2f9837c0b36b6e36ecacb0b0c')
    expect(hex(leaves[0]!)).toBe('d18a4db5dda3575a5d3abff92a41bb33ca70565d95d369a9d01f83c29bd17888')
  })

  it('the tree of the three rows: its root and the proof of leaf 0', () => {
    expect(hex(merkleRoot(leaves))).toBe('9dffd5ca5d130f09ae2600a80eba70d9ee4676dd4a301732a2f4a8e94910ce21')
    expect(inclusionProof(leaves, 0).map(hex)).toEqual([
      '7cdf4f87fbf4f9bea823f08f1f940e50771bfae3ad73b999fa0f2d629785ec21',
      'd420b122792964f6360e71c0f5a0fd17b0d3bec0bc80e74d33b4e33229331dcd',
    ])
  })

  it('the vkey, the signed checkpoint and the tlog-proof of row 42', () => {
    expect(ledgerVerifierKey(ORIGIN, KEY.publicKey)).toBe('example.com/hookledger+600a3dc7+AepKbGPinFIKvvVQexMuxfmVR3auvr57kkIe6mkURtIs')
    const note = signTreeNote(KEY, ORIGIN, 3, merkleRoot(leaves))
    expect(note).toBe(
      'example.com/hookledger\n3\nnf/Vyl0TDwmuJgCoDrpw2e5Gdt1KMBcyovSo6UkQziE=\n\n— example.com/hookledger YAo9x6H8jBEibpc+lJMO0/DbbQGyOVs3iSomzSngGdcyd8xSJ6EtpbdzWLFNaSSwQoAvaj2Oq2zazCSSPXLIIwvc2QU=\n',
    )
    const proof = formatTlogProof({ extra: ledgerRowBytes(ROW), index: 0, proof: inclusionProof(leaves, 0), checkpoint: note })
    expect(proof.split('\n').slice(0, 5)).toEqual([
      'c2sp.org/tlog-proof@v1',
      'extra ' + Buffer.from(ledgerRowBytes(ROW)).toString('base64'),
      'index 0',
      'fN9Ph/v0+b6oI/CPH5QOUHcb+uOtc7mZ+g8tYpeF7CE=',
      '1CCxInkpZPY2DnHA9aD9F7DTvsC8gOdNM7TjMikzHc0=',
    ])
    expect(verifyRowTlogProof(proof, { publicKey: Buffer.from(KEY.publicKey.slice(5), 'base64url') })).toMatchObject({ ok: true, index: 0, treeSize: 3 })
  })
})
