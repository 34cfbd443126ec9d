import { describe, expect, it } from 'vitest'
import {
  CHECKPOINT_GENESIS_HASH,
  checkpointHash,
  type LedgerCheckpoint,
  parseLedgerPublicKey,
  parseLedgerSigningKey,
  signCheckpoint,
} from './ledger-checkpoint.js'
import { type LedgerReceipt, type LedgerReceiptEntry, verifyLedgerReceipt } from './ledger-receipt.js'
import { CHAIN_GENESIS, chainNext, type ChainRow, ledgerLeafHash } from './ledger-row-encoding.js'
import { inclusionProof, merkleRoot } from './merkle-tree.js'

const KEY = parseLedgerSigningKey(`hlsk_${Buffer.alloc(32, 21).toString('base64url')}`)
const PUBLIC = parseLedgerPublicKey(KEY.publicKey)
const OTHER_PUBLIC = parseLedgerPublicKey(
  parseLedgerSigningKey(`hlsk_${Buffer.alloc(32, 22).toString('base64url')}`).publicKey,
)
const A = '5f2d3c1e-0000-4000-8000-00000000000a'
const B = '5f2d3c1e-0000-4000-8000-00000000000b'
const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex')

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

/** Two deliveries interleaved over three checkpoints (3, 4 and 2 rows), then two unsealed rows. */
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
const SIZES = [3, 4, 2]

interface Sealed {
  cp: LedgerCheckpoint
  rows: ChainRow[]
  leaves: Uint8Array[]
}

function seal(): Sealed[] {
  const out: Sealed[] = []
  let head = CHAIN_GENESIS
  let prev = CHECKPOINT_GENESIS_HASH
  let offset = 0
  for (const [i, size] of SIZES.entries()) {
    const rows = ROWS.slice(offset, offset + size)
    offset += size
    for (const r of rows) head = chainNext(head, r)
    const leaves = rows.map(ledgerLeafHash)
    const first = rows[0] as ChainRow
    const last = rows[rows.length - 1] as ChainRow
    const cp = signCheckpoint(KEY, {
      seq: i + 1,
      first: { tx_id: first.tx_id, position: first.position },
      last: { tx_id: last.tx_id, position: last.position },
      count: size,
      total: offset,
      chain_hash: hex(head),
      merkle_root: hex(merkleRoot(leaves)),
      prev_checkpoint_hash: prev,
      created_at: `2026-12-01T10:0${i}:00.000Z`,
    })
    prev = checkpointHash(cp)
    out.push({ cp, rows, leaves })
  }
  return out
}

const SEALED = seal()

/** What the database side's receipt builder produces for one delivery. */
function receiptFor(deliveryId: string): LedgerReceipt {
  const entries: LedgerReceiptEntry[] = []
  const checkpoints: LedgerCheckpoint[] = []
  for (const { cp, rows, leaves } of SEALED) {
    const mine = rows.flatMap((r, i) => (r.delivery_id === deliveryId ? [i] : []))
    if (mine.length > 0) checkpoints.push(cp)
    for (const i of mine) {
      entries.push({
        row: rows[i] as ChainRow,
        checkpoint_seq: cp.seq,
        leaf_index: i,
        tree_size: cp.count,
        proof: inclusionProof(leaves, i).map(hex),
      })
    }
  }
  const sealedCount = SIZES.reduce((a, b) => a + b, 0)
  const unsealed = ROWS.slice(sealedCount).filter((r) => r.delivery_id === deliveryId)
  return { format: 'hookledger.receipt.v1', delivery_id: deliveryId, entries, checkpoints, unsealed }
}

const RECEIPT = receiptFor(A)

type Writable<T> = { -readonly [K in keyof T]: T[K] }
/** A receipt as a forger holds it: a deep copy, every part writable. */
interface TamperableReceipt {
  format: string
  delivery_id: string
  entries: Writable<LedgerReceiptEntry>[]
  checkpoints: Writable<LedgerCheckpoint>[]
  unsealed: ChainRow[]
}
const copy = () => structuredClone(RECEIPT) as TamperableReceipt
const verify = (receipt: TamperableReceipt) => verifyLedgerReceipt(receipt as LedgerReceipt, PUBLIC)

describe('verifyLedgerReceipt: an honest receipt', () => {
  it('verifies, with every sealed entry proven and the unsealed ones counted', () => {
    expect(RECEIPT.entries).toHaveLength(6)
    expect(RECEIPT.checkpoints.map((cp) => cp.seq)).toEqual([1, 2, 3])
    expect(RECEIPT.unsealed.map((r) => r.position)).toEqual(['10', '11'])
    expect(verifyLedgerReceipt(RECEIPT, PUBLIC)).toEqual({ ok: true, proven: 6, unsealed: 2, problems: [] })
  })

  it('survives being a JSON file', () => {
    const file = JSON.parse(JSON.stringify(RECEIPT)) as LedgerReceipt
    expect(verifyLedgerReceipt(file, PUBLIC)).toMatchObject({ ok: true, proven: 6 })
  })

  it("the other delivery's receipt verifies too", () => {
    expect(verifyLedgerReceipt(receiptFor(B), PUBLIC)).toEqual({ ok: true, proven: 3, unsealed: 0, problems: [] })
  })

  it('a receipt of a delivery with no rows is empty but valid', () => {
    expect(verifyLedgerReceipt(receiptFor('none'), PUBLIC)).toEqual({ ok: true, proven: 0, unsealed: 0, problems: [] })
  })
})

describe('verifyLedgerReceipt: a tampered receipt', () => {
  it('an attempt that failed with 503 rewritten as 200 does not verify', () => {
    const receipt = copy()
    const entry = receipt.entries[1] as Writable<LedgerReceiptEntry>
    expect(entry.row.kind).toBe('delivery.attempted')
    expect((entry.row.payload as { status_code: number }).status_code).toBe(503)
    entry.row = { ...entry.row, payload: { ...(entry.row.payload as object), status_code: 200 } }
    expect(verify(receipt)).toEqual({
      ok: false,
      proven: 5,
      unsealed: 2,
      problems: ['entry 2 (position 3): not in checkpoint 1 at leaf_index 2 (row or proof altered)'],
    })
  })

  it.each<[string, (r: TamperableReceipt) => void, RegExp, number]>([
    ['a proof node flipped', (r) => { const e = r.entries[0]!; e.proof = [e.proof[0]!.replace(/^./, (c) => (c === '0' ? '1' : '0')), ...e.proof.slice(1)] }, /entry 1 .*not in checkpoint 1/, 5],
    ['a proof node dropped', (r) => { r.entries[0]!.proof = r.entries[0]!.proof.slice(1) }, /entry 1 .*not in checkpoint 1/, 5],
    ['another leaf index', (r) => { r.entries[0]!.leaf_index = 1 }, /entry 1 .*not in checkpoint 1 at leaf_index 1/, 5],
    ['a tree_size other than the count', (r) => { r.entries[2]!.tree_size = 5 }, /entry 3 .*tree_size 5 is not checkpoint 2's count 4/, 5],
    ['an entry pointed at another checkpoint', (r) => { r.entries[2]!.checkpoint_seq = 1 }, /entry 3 .*tree_size 4 is not checkpoint 1's count 3/, 5],
    ['a checkpoint missing', (r) => { r.checkpoints.splice(2, 1) }, /entry 6 .*checkpoint 3 is not in the receipt/, 4],
    ['a checkpoint edited', (r) => { r.checkpoints[1]!.merkle_root = 'f'.repeat(64) }, /checkpoint 2: the signature does not verify/, 4],
    ['a checkpoint listed twice', (r) => { r.checkpoints.push(r.checkpoints[0]!) }, /checkpoint 1 is listed twice/, 4],
    ['a non-hex proof', (r) => { r.entries[0]!.proof = ['zz'] }, /entry 1 .*not a list of 64-digit hex/, 5],
    ['a row that no longer encodes', (r) => { r.entries[0]!.row = { ...r.entries[0]!.row, occurred_at: '2026-12-01' } }, /entry 1 .*occurred_at/, 5],
    ['an entry repeated', (r) => { r.entries.push(r.entries[0]!) }, /entry 7 .*the same leaf as an earlier entry/, 6],
    ['the receipt relabelled as another delivery', (r) => { r.delivery_id = B }, /entry 1 .*belongs to delivery .*a, not .*b/, 0],
    ['the wrong format', (r) => { r.format = 'hookledger.receipt.v0' }, /format is "hookledger.receipt.v0"/, 6],
    ['an unsealed row of another delivery', (r) => { r.unsealed.push(ROWS[1] as ChainRow) }, /unsealed row 3 \(position 2\): belongs to delivery/, 6],
    ['entries that are not a list', (r) => { (r as { entries: unknown }).entries = {} }, /entries is not a list/, 0],
  ])('fails: %s', (_name, tamper, problem, proven) => {
    const receipt = copy()
    tamper(receipt)
    const result = verify(receipt)
    expect(result.ok).toBe(false)
    expect(result.problems.some((p) => problem.test(p))).toBe(true)
    expect(result.proven).toBe(proven)
  })

  it("an entry of another delivery, with a valid proof, is still refused", () => {
    const receipt = copy()
    const other = receiptFor(B).entries[0] as LedgerReceiptEntry
    receipt.entries.push(other)
    expect(verify(receipt).problems).toEqual([
      `entry 7 (position 2): belongs to delivery ${B}, not ${A}`,
    ])
  })

  it('a key that did not sign: every checkpoint fails, nothing is proven', () => {
    const result = verifyLedgerReceipt(RECEIPT, OTHER_PUBLIC)
    expect(result.proven).toBe(0)
    expect(result.problems.filter((p) => /signature does not verify/.test(p))).toHaveLength(3)
  })

  it('reports, never throws, on garbage', () => {
    expect(verifyLedgerReceipt(null as unknown as LedgerReceipt, PUBLIC)).toEqual({
      ok: false,
      proven: 0,
      unsealed: 0,
      problems: ['the receipt is not an object'],
    })
    const junk = { format: 'hookledger.receipt.v1', delivery_id: A, entries: [null], checkpoints: [null], unsealed: [7] }
    const result = verifyLedgerReceipt(junk as unknown as LedgerReceipt, PUBLIC)
    expect(result.ok).toBe(false)
    expect(result.problems.length).toBeGreaterThan(0)
  })
})
