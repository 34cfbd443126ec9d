import { describe, expect, it } from 'vitest'
import { createHash } from 'node:crypto'
import { parseLedgerPublicKey, parseLedgerSigningKey } from './ledger-checkpoint.js'
import { type LedgerReceipt, type LedgerReceiptEntry, verifyLedgerReceipt, verifyRowTlogProof } from './ledger-receipt.js'
import { type ChainRow, ledgerRowBytes, ledgerRowCommitment, logLeafHash } from './ledger-row-encoding.js'
import { inclusionProof, merkleRoot } from './merkle-tree.js'
import { signTreeNote } from './ledger-tree-note.js'
import { formatTlogProof, parseTlogProof } from '../log/index.js'

const KEY = parseLedgerSigningKey(`hlsk_${Buffer.alloc(32, 21).toString('base64url')}`)
const PUBLIC = parseLedgerPublicKey(KEY.publicKey)
const OTHER_PUBLIC = parseLedgerPublicKey(
  parseLedgerSigningKey(`hlsk_${Buffer.alloc(32, 22).toString('base64url')}`).publicKey,
)
const A = '5f2d3c1e-0000-4000-8000-00000000000a'
const B = '5f2d3c1e-0000-4000-8000-00000000000b'
const ORIGIN = 'hookledger.test/log'

function row(position: number, deliveryId: string, kind: string, payload: object): ChainRow {
  return {
    position: String(position),
    tx_id: String(900 + position),
    occurred_at: new Date(Date.UTC(2026, 11, 1, 9) + position * 1000).toISOString().replace('Z', '000Z'),
    owner_id: 'own_1',
    kind,
    endpoint_id: '7c9e6679-7425-40de-944b-e07fc1f90ae7',
    delivery_id: deliveryId,
    event_id: 'evt_1',
    payload,
    actor: 'worker:w1',
  }
}
const attempt = (n: number, status: number) => ({
  attempt: n,
  counted: true,
  run: 1,
  status_code: status,
  outcome: status < 300 ? 'delivered' : 'http_error',
})

/** Two deliveries interleaved: nine rows sealed into the log's tree, then two unsealed rows. */
const ROWS: readonly ChainRow[] = [
  row(1, A, 'delivery.enqueued', { event_type: 'corpus.note.changed' }),
  row(2, B, 'delivery.enqueued', { event_type: 'corpus.note.changed' }),
  row(3, A, 'delivery.attempted', attempt(1, 503)),
  row(4, B, 'delivery.attempted', attempt(1, 200)),
  row(5, A, 'delivery.retry_scheduled', { backoff_ms: 5000 }),
  row(6, A, 'delivery.attempted', attempt(2, 503)),
  row(7, B, 'delivery.completed', {}),
  row(8, A, 'delivery.retry_scheduled', { backoff_ms: 300000 }),
  row(9, A, 'delivery.attempted', attempt(3, 503)),
  row(10, A, 'delivery.retry_scheduled', { backoff_ms: 1800000 }),
  row(11, A, 'delivery.attempted', attempt(4, 200)),
]
const SEALED_ROWS = 9

const LEAVES = ROWS.slice(0, SEALED_ROWS).map((r) => logLeafHash(ledgerRowCommitment(r)))
const NOTE = signTreeNote(KEY, ORIGIN, SEALED_ROWS, merkleRoot(LEAVES))
const TRUST = { publicKey: PUBLIC }

/** What the database side's receipt builder produces for one delivery. */
function receiptFor(deliveryId: string): LedgerReceipt {
  const entries: LedgerReceiptEntry[] = []
  ROWS.slice(0, SEALED_ROWS).forEach((row, index) => {
    if (row.delivery_id !== deliveryId) return
    const tlog_proof = formatTlogProof({ extra: ledgerRowBytes(row), index, proof: inclusionProof(LEAVES, index), checkpoint: NOTE })
    entries.push({ row, leaf_index: index, tlog_proof })
  })
  return {
    format: 'hookledger.receipt.v2',
    delivery_id: deliveryId,
    origin: ORIGIN,
    tree_size: SEALED_ROWS,
    entries,
    unsealed: ROWS.slice(SEALED_ROWS).filter((r) => r.delivery_id === deliveryId),
    unprovable: [],
  }
}

type Writable<T> = { -readonly [K in keyof T]: T[K] }
type TamperableReceipt = Omit<Writable<LedgerReceipt>, 'entries' | 'unsealed' | 'unprovable'> & {
  entries: Writable<LedgerReceiptEntry>[]
  unsealed: ChainRow[]
  unprovable: ChainRow[]
}
const RECEIPT = receiptFor(A)
const copy = () => JSON.parse(JSON.stringify(RECEIPT)) as TamperableReceipt
const verify = (receipt: TamperableReceipt) => verifyLedgerReceipt(receipt as unknown as LedgerReceipt, TRUST)

/** Rewrites one line of a tlog-proof text. */
const editProof = (text: string, edit: (lines: string[]) => void) => {
  const lines = text.split('\n')
  edit(lines)
  return lines.join('\n')
}
const flipFirstChar = (line: string) => line.replace(/^./, (c) => (c === 'A' ? 'B' : 'A'))

describe('verifyLedgerReceipt: an honest receipt', () => {
  it('proves every sealed row of the delivery and lists the unsealed ones', () => {
    expect(verifyLedgerReceipt(RECEIPT, TRUST)).toEqual({ ok: true, proven: 6, unsealed: 2, unprovable: 0, problems: [] })
  })

  it('verifies as well after a JSON round trip (a saved file)', () => {
    expect(verify(copy())).toMatchObject({ ok: true, proven: 6 })
  })

  it('holds for the other delivery, fully sealed', () => {
    expect(verifyLedgerReceipt(receiptFor(B), TRUST)).toEqual({ ok: true, proven: 3, unsealed: 0, unprovable: 0, problems: [] })
  })

  it('a receipt of a delivery with no rows is empty but valid', () => {
    expect(verifyLedgerReceipt(receiptFor('none'), TRUST)).toEqual({ ok: true, proven: 0, unsealed: 0, unprovable: 0, problems: [] })
  })

  it('each entry is a standard tlog-proof: the entry is SHA-256 of the extra bytes, the index its leaf', () => {
    const entry = RECEIPT.entries[1]!
    const parsed = parseTlogProof(entry.tlog_proof)
    expect(Number(parsed.index)).toBe(entry.leaf_index)
    expect(Buffer.from(parsed.extra!).toString()).toBe(Buffer.from(ledgerRowBytes(entry.row)).toString())
    const leaf = createHash('sha256').update(Uint8Array.of(0)).update(createHash('sha256').update(parsed.extra!).digest()).digest()
    expect(Buffer.from(leaf).equals(Buffer.from(LEAVES[entry.leaf_index]!))).toBe(true)
    expect(verifyRowTlogProof(entry.tlog_proof, TRUST)).toMatchObject({ ok: true, origin: ORIGIN, treeSize: SEALED_ROWS, index: entry.leaf_index })
  })
})

describe('verifyLedgerReceipt: a tampered receipt', () => {
  it('an attempt that failed with 503 rewritten as 200 does not verify', () => {
    const receipt = copy()
    const entry = receipt.entries[1]!
    expect(entry.row.kind).toBe('delivery.attempted')
    const forged = { ...entry.row, payload: { ...(entry.row.payload as object), status_code: 200 } }
    // The row shown and the bytes proven, both rewritten: the proof no longer leads to the root.
    entry.row = forged
    entry.tlog_proof = editProof(entry.tlog_proof, (l) => { l[1] = 'extra ' + Buffer.from(ledgerRowBytes(forged)).toString('base64') })
    expect(verify(receipt)).toEqual({
      ok: false,
      proven: 5,
      unsealed: 2,
      unprovable: 0,
      problems: ['entry 2 (leaf 2): row 3 is not at leaf 2 of the signed tree of 9 (row or proof altered)'],
    })
  })

  it.each<[string, (r: TamperableReceipt) => void, RegExp, number]>([
    ['a proof hash flipped', (r) => { r.entries[0]!.tlog_proof = editProof(r.entries[0]!.tlog_proof, (l) => { l[3] = flipFirstChar(l[3]!) }) }, /entry 1 .*not at leaf 0/, 5],
    ['a proof hash dropped', (r) => { r.entries[0]!.tlog_proof = editProof(r.entries[0]!.tlog_proof, (l) => { l.splice(3, 1) }) }, /entry 1 .*not at leaf 0/, 5],
    ['another leaf index', (r) => { r.entries[0]!.tlog_proof = editProof(r.entries[0]!.tlog_proof, (l) => { l[2] = 'index 1' }) }, /entry 1 .*not at leaf 1/, 5],
    ['the checkpoint edited', (r) => { r.entries[0]!.tlog_proof = r.entries[0]!.tlog_proof.replace(`\n${SEALED_ROWS}\n`, '\n10\n') }, /entry 1 .*not signed by this key/, 5],
    ['the row shown is not the row proven', (r) => { r.entries[0]!.row = { ...r.entries[0]!.row, actor: 'operator' } }, /entry 1: the row shown is not the row proven/, 5],
    ['extra bytes that are not a canonical row', (r) => { r.entries[0]!.tlog_proof = editProof(r.entries[0]!.tlog_proof, (l) => { l[1] = 'extra ' + Buffer.from('[1]').toString('base64') }) }, /entry 1 .*not a ledger row/, 5],
    ['no extra line', (r) => { r.entries[0]!.tlog_proof = editProof(r.entries[0]!.tlog_proof, (l) => { l.splice(1, 1) }) }, /entry 1 .*no extra line/, 5],
    ['an entry repeated', (r) => { r.entries.push(r.entries[0]!) }, /entry 7: the same leaf as an earlier entry/, 6],
    ['the receipt relabelled as another delivery', (r) => { r.delivery_id = B }, /entry 1: the proven row belongs to delivery .*a, not .*b/, 0],
    ['the wrong format', (r) => { r.format = 'hookledger.receipt.v1' as never }, /format is "hookledger.receipt.v1"/, 6],
    ['an unsealed row of another delivery', (r) => { r.unsealed.push(ROWS[1] as ChainRow) }, /unsealed row 3 \(position 2\): belongs to delivery/, 6],
    ['a row the service could not prove', (r) => { r.unprovable.push(ROWS[0] as ChainRow) }, /row 1 sits inside the sealed range but no checkpoint sealed it/, 6],
    ['entries that are not a list', (r) => { (r as { entries: unknown }).entries = {} }, /entries is not a list/, 0],
    ['an entry that is not a tlog-proof', (r) => { r.entries[0]!.tlog_proof = 'hello' }, /entry 1 .*not a tlog-proof/, 5],
  ])('fails: %s', (_name, tamper, problem, proven) => {
    const receipt = copy()
    tamper(receipt)
    const result = verify(receipt)
    expect(result.ok).toBe(false)
    expect(result.problems.some((p) => problem.test(p)), JSON.stringify(result.problems)).toBe(true)
    expect(result.proven).toBe(proven)
  })

  it('an entry of another delivery, with a valid proof, is still refused', () => {
    const receipt = copy()
    receipt.entries.push(receiptFor(B).entries[0] as LedgerReceiptEntry)
    expect(verify(receipt).problems).toEqual([`entry 7: the proven row belongs to delivery ${B}, not ${A}`])
  })

  it('a key that did not sign: nothing is proven', () => {
    const result = verifyLedgerReceipt(RECEIPT, { publicKey: OTHER_PUBLIC })
    expect(result.proven).toBe(0)
    expect(result.problems.filter((p) => /not signed by this key/.test(p))).toHaveLength(6)
  })

  it('a trusted vkey of another origin: nothing is proven', () => {
    const result = verifyLedgerReceipt(RECEIPT, { publicKey: PUBLIC, origin: 'other.example/log' })
    expect(result.proven).toBe(0)
    expect(result.problems[0]).toMatch(/of log hookledger.test\/log, not other.example\/log/)
  })

  it('reports, never throws, on garbage', () => {
    expect(verifyLedgerReceipt(null as unknown as LedgerReceipt, TRUST)).toEqual({ ok: false, proven: 0, unsealed: 0, unprovable: 0, problems: ['the receipt is not an object'] })
    const junk = { format: 'hookledger.receipt.v2', delivery_id: A, entries: [null, { tlog_proof: 7 }], unsealed: [7], unprovable: 'x' }
    const result = verifyLedgerReceipt(junk as unknown as LedgerReceipt, TRUST)
    expect(result.ok).toBe(false)
    expect(result.problems.length).toBeGreaterThan(0)
  })
})
