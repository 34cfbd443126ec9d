import { type LedgerCheckpoint, verifyCheckpointSignature } from './ledger-checkpoint.js'
import { type ChainRow, ledgerLeafHash, ledgerRowBytes } from './ledger-row-encoding.js'
import { verifyInclusion } from './merkle-tree.js'

/**
 * A delivery's receipt (`hookledger.receipt.v1`): its ledger rows, each with a Merkle
 * inclusion proof into the signed checkpoint that sealed it, so the receiver of the file can
 * check them offline with nothing but the ledger's public key. A receipt proves that every
 * row it lists was sealed as shown; it cannot prove that no row of the delivery was left out.
 * Rows not sealed yet travel in `unsealed`, listed but not proven.
 */

/** Format tag of a receipt. */
export const LEDGER_RECEIPT_FORMAT = 'hookledger.receipt.v1'

/** One sealed row and its proof. */
export interface LedgerReceiptEntry {
  readonly row: ChainRow
  /** seq of the checkpoint that sealed the row (one of the receipt's checkpoints). */
  readonly checkpoint_seq: number
  /** The row's index among that checkpoint's rows, in chain order. */
  readonly leaf_index: number
  /** That checkpoint's count. */
  readonly tree_size: number
  /** RFC 6962 audit path, hex, deepest sibling first. */
  readonly proof: readonly string[]
}

export interface LedgerReceipt {
  readonly format: typeof LEDGER_RECEIPT_FORMAT
  readonly delivery_id: string
  readonly entries: readonly LedgerReceiptEntry[]
  /** Every checkpoint an entry refers to. */
  readonly checkpoints: readonly LedgerCheckpoint[]
  /** Entries not yet sealed (listed, not proven). */
  readonly unsealed: readonly ChainRow[]
}

export interface LedgerReceiptVerification {
  readonly ok: boolean
  /** Entries whose row is proven sealed by a validly signed checkpoint. */
  readonly proven: number
  readonly unsealed: number
  readonly problems: string[]
}

const HEX_32 = /^[0-9a-f]{64}$/

/**
 * Checks every checkpoint's signature, and for each entry: that its row is the delivery's,
 * that its checkpoint is in the receipt, that tree_size is that checkpoint's count, and that
 * the proof leads from ledgerLeafHash(row) at leaf_index to the checkpoint's merkle_root.
 * Never throws on a malformed receipt: it reports what is wrong.
 */
export function verifyLedgerReceipt(
  receipt: LedgerReceipt,
  publicKey: Uint8Array,
): LedgerReceiptVerification {
  const problems: string[] = []
  if (typeof receipt !== 'object' || receipt === null) {
    return { ok: false, proven: 0, unsealed: 0, problems: ['the receipt is not an object'] }
  }
  if (receipt.format !== LEDGER_RECEIPT_FORMAT) {
    problems.push(`format is ${JSON.stringify(receipt.format)}, not "${LEDGER_RECEIPT_FORMAT}"`)
  }
  const deliveryId = receipt.delivery_id
  if (typeof deliveryId !== 'string' || deliveryId.length === 0) {
    problems.push('delivery_id is missing')
  }

  const bySeq = new Map<number, LedgerCheckpoint | 'not validly signed' | 'listed twice'>()
  for (const cp of arrayOf(receipt.checkpoints, 'checkpoints', problems)) {
    const seq = cp?.seq
    if (bySeq.has(seq)) {
      problems.push(`checkpoint ${String(seq)} is listed twice`)
      bySeq.set(seq, 'listed twice')
    } else if (verifyCheckpointSignature(cp, publicKey)) {
      bySeq.set(seq, cp)
    } else {
      problems.push(`checkpoint ${String(seq)}: the signature does not verify`)
      bySeq.set(seq, 'not validly signed')
    }
  }

  let proven = 0
  const seen = new Set<string>()
  arrayOf(receipt.entries, 'entries', problems).forEach((entry, i) => {
    if (typeof entry !== 'object' || entry === null) {
      problems.push(`entry ${i + 1} is not an entry`)
      return
    }
    const where = `entry ${i + 1} (position ${String(entry.row?.position)})`
    const before = problems.length
    checkDelivery(entry.row, deliveryId, where, problems)
    const place = `${String(entry.checkpoint_seq)}/${String(entry.leaf_index)}`
    if (seen.has(place)) problems.push(`${where}: the same leaf as an earlier entry`)
    seen.add(place)

    const cp = bySeq.get(entry.checkpoint_seq)
    if (cp === undefined) {
      problems.push(`${where}: checkpoint ${String(entry.checkpoint_seq)} is not in the receipt`)
    } else if (typeof cp === 'string') {
      problems.push(`${where}: checkpoint ${String(entry.checkpoint_seq)} is ${cp}`)
    } else {
      checkProof(entry, cp, where, problems)
    }
    if (problems.length === before) proven++
  })

  const unsealed = arrayOf(receipt.unsealed, 'unsealed', problems)
  unsealed.forEach((row, i) => {
    const where = `unsealed row ${i + 1} (position ${String(row?.position)})`
    if (checkDelivery(row, deliveryId, where, problems)) {
      try {
        ledgerRowBytes(row)
      } catch (error) {
        problems.push(`${where}: ${messageOf(error)}`)
      }
    }
  })

  return { ok: problems.length === 0, proven, unsealed: unsealed.length, problems }
}

function checkProof(
  entry: LedgerReceiptEntry,
  cp: LedgerCheckpoint,
  where: string,
  problems: string[],
): void {
  // The size proven against is the signed count: a proof also fits some larger trees.
  if (entry.tree_size !== cp.count) {
    problems.push(
      `${where}: tree_size ${String(entry.tree_size)} is not checkpoint ${cp.seq}'s count ${cp.count}`,
    )
    return
  }
  const proof = Array.isArray(entry.proof) ? entry.proof : null
  if (proof === null || !proof.every((node) => typeof node === 'string' && HEX_32.test(node))) {
    problems.push(`${where}: the proof is not a list of 64-digit hex hashes`)
    return
  }
  let leaf: Uint8Array
  try {
    leaf = ledgerLeafHash(entry.row)
  } catch (error) {
    problems.push(`${where}: ${messageOf(error)}`)
    return
  }
  const nodes = proof.map((node) => new Uint8Array(Buffer.from(node, 'hex')))
  const root = new Uint8Array(Buffer.from(cp.merkle_root, 'hex'))
  if (!verifyInclusion(leaf, entry.leaf_index, cp.count, nodes, root)) {
    problems.push(
      `${where}: not in checkpoint ${cp.seq} at leaf_index ${String(entry.leaf_index)} ` +
        '(row or proof altered)',
    )
  }
}

/** False when there is no row at all, so nothing more can be checked. */
function checkDelivery(
  row: ChainRow | undefined,
  deliveryId: unknown,
  where: string,
  problems: string[],
): boolean {
  if (typeof row !== 'object' || row === null) {
    problems.push(`${where}: no row`)
    return false
  }
  if (row.delivery_id !== deliveryId) {
    problems.push(`${where}: belongs to delivery ${String(row.delivery_id)}, not ${String(deliveryId)}`)
  }
  return true
}

function arrayOf<T>(value: readonly T[], name: string, problems: string[]): readonly T[] {
  if (Array.isArray(value)) return value
  problems.push(`${name} is not a list`)
  return []
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
