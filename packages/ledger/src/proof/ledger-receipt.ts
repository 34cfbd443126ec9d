import { createHash } from 'node:crypto'
import { ed25519NoteVerifier, encodeVerifierKey, openCheckpoint, parseTlogProof, verifyCheckpointWithPolicy, type TlogPolicy } from '../log/index.js'
import { type ChainRow, ledgerRowBytes, ledgerRowFromBytes, logLeafHash } from './ledger-row-encoding.js'
import { verifyInclusion } from './merkle-tree.js'
import { ledgerRowIsAbout } from './ledger-row-about.js'

/**
 * A delivery's receipt (`hookledger.receipt.v2`): every ledger row about it, each sealed one as
 * a C2SP `tlog-proof` — the row's canonical bytes in its `extra` line, its leaf index in the
 * one growing tree, the RFC 6962 inclusion proof, and the log's signed checkpoint — so any
 * `tlog-proof` verifier holding the log's vkey checks it offline (the entry is SHA-256 of the
 * extra bytes). A receipt proves every row it shows or names the ones it cannot:
 *
 * - `unsealed`: rows after the newest checkpoint (they will be provable after the next seal);
 * - `unprovable`: rows inside the sealed range that no checkpoint holds — a row written around
 *   the one door, shown so that nobody takes it for a fact.
 *
 * It cannot prove that no row of the delivery was left out.
 */

/** Format tag of a receipt. */
export const LEDGER_RECEIPT_FORMAT = 'hookledger.receipt.v2'

/** One sealed row and its proof. */
export interface LedgerReceiptEntry {
  /** The row, for reading; the proof's `extra` carries its canonical bytes, which are what is proven. */
  readonly row: ChainRow
  /** Its leaf index in the log (its sealed ordinal). */
  readonly leaf_index: number
  /** `c2sp.org/tlog-proof@v1` text: save it as `<leaf_index>.tlog-proof`. */
  readonly tlog_proof: string
}

export interface LedgerReceipt {
  readonly format: typeof LEDGER_RECEIPT_FORMAT
  readonly delivery_id: string
  /** The log's origin (the checkpoint's first line and its key name). */
  readonly origin: string | null
  /** The size of the tree every proof is against (the checkpoint the proofs carry). */
  readonly tree_size: number
  readonly entries: readonly LedgerReceiptEntry[]
  /** Rows not sealed yet: listed, not proven. */
  readonly unsealed: readonly ChainRow[]
  /** Rows inside the sealed range that no checkpoint sealed: listed as what they are. */
  readonly unprovable: readonly ChainRow[]
}

export interface LedgerReceiptVerification {
  /** Every shown row proven (unsealed ones aside), nothing altered and nothing unprovable. */
  readonly ok: boolean
  /** Entries whose row is proven by a validly signed checkpoint. */
  readonly proven: number
  readonly unsealed: number
  readonly unprovable: number
  readonly problems: string[]
}

/** What one `.tlog-proof` of a ledger row proves. */
export interface RowProofCheck {
  readonly ok: boolean
  readonly index: number | null
  readonly treeSize: number | null
  readonly origin: string | null
  /** The proven row (decoded from `extra`), when the bytes are a row's. */
  readonly row: ChainRow | null
  readonly problem: string | null
}

const sha256 = (bytes: Uint8Array) => new Uint8Array(createHash('sha256').update(bytes).digest())

/**
 * Checks one `tlog-proof` of a ledger row: the checkpoint is signed by `publicKey` under its
 * origin (`origin` too when the trusted key named one), `extra` is a row's canonical bytes, and
 * the proof leads from SHA-256(0x00 ‖ SHA-256(extra)) at `index` to the signed root. Never
 * throws: a malformed file is a problem.
 */
export interface ReceiptTrust {
  readonly publicKey: Uint8Array
  /** The log's origin, when the trusted key was given as a vkey. */
  readonly origin?: string | null
  /** A tlog-policy: the checkpoint must also carry its quorum of witness cosignatures. */
  readonly policy?: TlogPolicy | null
}

export function verifyRowTlogProof(text: string | Uint8Array, trust: ReceiptTrust): RowProofCheck {
  const fail = (problem: string, partial: Partial<RowProofCheck> = {}): RowProofCheck => ({
    ok: false, index: null, treeSize: null, origin: null, row: null, problem, ...partial,
  })
  let proof
  try {
    proof = parseTlogProof(text)
  } catch (err) {
    return fail(`not a tlog-proof: ${(err as Error).message}`)
  }
  const index = Number(proof.index)
  const origin = proof.body.origin
  const at = { index, treeSize: Number(proof.body.size), origin }
  if (trust.origin && trust.origin !== origin) return fail(`the checkpoint is of log ${origin}, not ${trust.origin}`, at)
  const logVerifier = ed25519NoteVerifier(encodeVerifierKey(origin, trust.publicKey))
  try {
    openCheckpoint(proof.checkpoint, [logVerifier])
  } catch (err) {
    return fail(`the checkpoint is not signed by this key (${(err as Error).message})`, at)
  }
  if (trust.policy) {
    try {
      verifyCheckpointWithPolicy(trust.policy, proof.checkpoint, [logVerifier])
    } catch (err) {
      return fail(`the checkpoint lacks the policy's quorum of witnesses (${(err as Error).message})`, at)
    }
  }
  if (proof.extra === null) return fail('no extra line: the row the proof is about is missing', at)
  const row = ledgerRowFromBytes(proof.extra)
  if (row === null) return fail('the extra bytes are not a ledger row in its canonical encoding', at)
  const leaf = logLeafHash(sha256(proof.extra))
  if (!verifyInclusion(leaf, index, at.treeSize, proof.proof, proof.body.root)) {
    return fail(`row ${row.position} is not at leaf ${index} of the signed tree of ${at.treeSize} (row or proof altered)`, { ...at, row })
  }
  return { ok: true, ...at, row, problem: null }
}

/**
 * Checks a whole receipt: every entry's proof (verifyRowTlogProof), that each row is the
 * delivery's and is the row the entry shows, that no leaf appears twice; unsealed rows must be
 * well-formed rows of the delivery, and any unprovable row fails the receipt.
 */
export function verifyLedgerReceipt(receipt: LedgerReceipt, trust: ReceiptTrust): LedgerReceiptVerification {
  const problems: string[] = []
  if (typeof receipt !== 'object' || receipt === null) {
    return { ok: false, proven: 0, unsealed: 0, unprovable: 0, problems: ['the receipt is not an object'] }
  }
  if (receipt.format !== LEDGER_RECEIPT_FORMAT) problems.push(`format is ${JSON.stringify(receipt.format)}, not "${LEDGER_RECEIPT_FORMAT}"`)
  const deliveryId = receipt.delivery_id
  if (typeof deliveryId !== 'string' || deliveryId.length === 0) problems.push('delivery_id is missing')
  let proven = 0
  const seen = new Set<number>()
  arrayOf(receipt.entries, 'entries', problems).forEach((entry, i) => {
    const where = `entry ${i + 1}`
    if (typeof entry !== 'object' || entry === null || typeof entry.tlog_proof !== 'string') {
      problems.push(`${where}: no tlog_proof`)
      return
    }
    const check = verifyRowTlogProof(entry.tlog_proof, trust)
    if (!check.ok) {
      problems.push(`${where} (leaf ${String(check.index ?? entry.leaf_index)}): ${check.problem}`)
      return
    }
    const before = problems.length
    if (!ledgerRowIsAbout(check.row!, deliveryId)) problems.push(`${where}: the proven row belongs to delivery ${String(check.row!.delivery_id)}, not ${String(deliveryId)}`)
    if (!sameRow(entry.row, check.row!)) problems.push(`${where}: the row shown is not the row proven (position ${check.row!.position})`)
    if (entry.leaf_index !== check.index) problems.push(`${where}: leaf_index ${String(entry.leaf_index)} is not the proof's ${String(check.index)}`)
    if (seen.has(check.index!)) problems.push(`${where}: the same leaf as an earlier entry`)
    seen.add(check.index!)
    if (problems.length === before) proven++
  })
  const unsealed = arrayOf(receipt.unsealed, 'unsealed', problems)
  unsealed.forEach((row, i) => {
    const where = `unsealed row ${i + 1} (position ${String(row?.position)})`
    if (typeof row !== 'object' || row === null) return void problems.push(`${where}: no row`)
    if (!ledgerRowIsAbout(row, deliveryId)) problems.push(`${where}: belongs to delivery ${String(row.delivery_id)}, not ${String(deliveryId)}`)
    try {
      ledgerRowBytes(row)
    } catch (error) {
      problems.push(`${where}: ${error instanceof Error ? error.message : String(error)}`)
    }
  })
  const unprovable = arrayOf(receipt.unprovable ?? [], 'unprovable', problems)
  unprovable.forEach((row) => problems.push(`row ${String(row?.position)} sits inside the sealed range but no checkpoint sealed it: written around the ledger's door`))
  return { ok: problems.length === 0, proven, unsealed: unsealed.length, unprovable: unprovable.length, problems }
}

function sameRow(shown: ChainRow | undefined, proven: ChainRow): boolean {
  try {
    const a = ledgerRowBytes(shown as ChainRow)
    const b = ledgerRowBytes(proven)
    return a.length === b.length && a.every((x, i) => x === b[i])
  } catch {
    return false
  }
}

function arrayOf<T>(value: readonly T[], name: string, problems: string[]): readonly T[] {
  if (Array.isArray(value)) return value
  problems.push(`${name} is not a list`)
  return []
}
