import { LedgerChainVerifier, type ChainVerification, type LedgerChainVerifierOptions } from './ledger-chain-verifier.js'
import { ed25519NoteVerifier, encodeVerifierKey, openCheckpoint, parseCheckpointBody } from '../log/index.js'
import { noteText } from './ledger-tree-note.js'
import { ledgerKeysAccepted } from './ledger-key-rotation.js'

const EXPORT_V1 = 'hookledger.ledger-export.v1'
const EXPORT_V2 = 'hookledger.ledger-export.v2'

/**
 * Verifies a ledger export (JSON lines, as `ledger export` writes them) with the public key
 * alone, one line at a time: header, then the anchor checkpoint when the export does not start
 * at the ledger's beginning, then each checkpoint with its sealed leaves followed by its rows.
 * A line that is not valid JSON or of no known type is a finding, not an exception.
 */
export class LedgerExportVerifier {
  readonly #chain: LedgerChainVerifier
  readonly #malformed: string[] = []
  readonly #keys: Uint8Array[]
  #line = 0
  #sawHeader = false
  #format: string | null = null
  /** The total of the last checkpoint pushed (the tree size the export should end at). */
  #lastTotal = 0
  #end: { line: number; size: number; note: string | null } | null = null

  constructor(options: LedgerChainVerifierOptions) {
    this.#chain = new LedgerChainVerifier(options)
    this.#keys = ledgerKeysAccepted(options.publicKey, options.handOvers ?? [])
  }

  pushLine(text: string): void {
    this.#line++
    if (text.trim() === '') return
    let line: { type?: unknown; checkpoint?: unknown; leaves?: unknown; row?: unknown; format?: unknown }
    try {
      line = JSON.parse(text) as typeof line
    } catch {
      this.#malformed.push(`line ${this.#line}: not valid JSON`)
      return
    }
    try {
      switch (line.type) {
        case 'header':
          if (line.format !== EXPORT_V1 && line.format !== EXPORT_V2) this.#malformed.push(`line ${this.#line}: unknown export format ${JSON.stringify(line.format)}`)
          this.#format = String(line.format)
          this.#sawHeader = true
          return
        case 'anchor':
          this.#chain.pushAnchor(line.checkpoint as never)
          return
        case 'checkpoint': {
          const leaves = line.leaves as { positions: string[]; hashes: string[] }
          if (this.#end) this.#malformed.push(`line ${this.#line}: a checkpoint after the export's end`)
          this.#lastTotal = Number((line.checkpoint as { total?: unknown })?.total)
          this.#chain.pushCheckpoint(line.checkpoint as never, {
            positions: leaves.positions,
            hashes: leaves.hashes.map((h) => Uint8Array.from(Buffer.from(h, 'hex'))),
          })
          return
        }
        case 'row':
          if (this.#end) this.#malformed.push(`line ${this.#line}: a row after the export's end`)
          this.#chain.pushRow(line.row as never)
          return
        case 'end': {
          const end = line as { tree_size?: unknown; tree_note?: unknown }
          this.#end = { line: this.#line, size: Number(end.tree_size), note: typeof end.tree_note === 'string' ? end.tree_note : null }
          return
        }
        default:
          this.#malformed.push(`line ${this.#line}: unknown line type ${JSON.stringify(line.type)}`)
      }
    } catch (error) {
      this.#malformed.push(`line ${this.#line}: ${(error as Error).message}`)
    }
  }

  finish(): ChainVerification & { malformed: string[] } {
    const result = this.#chain.finish()
    const malformed = this.#sawHeader ? [...this.#malformed] : ['no export header: not a hookledger ledger export', ...this.#malformed]
    if (this.#format === EXPORT_V2) malformed.push(...this.#endProblems())
    return { ...result, ok: result.ok && malformed.length === 0, malformed }
  }

  /** A v2 export ends with the signed note of the tree its last checkpoint reached. */
  #endProblems(): string[] {
    const end = this.#end
    if (!end) return ['the export has no signed end: it was cut short (or is not whole)']
    if (end.size !== this.#lastTotal) return [`line ${end.line}: the export ends at a tree of ${end.size} rows, but its last checkpoint reaches ${this.#lastTotal}`]
    if (end.size === 0) return []
    if (end.note === null) return [`line ${end.line}: the export's end is not signed (its checkpoints were sealed before the log's tree existed)`]
    try {
      const body = parseCheckpointBody(noteText(end.note))
      openCheckpoint(end.note, this.#keys.map((k) => ed25519NoteVerifier(encodeVerifierKey(body.origin, k))))
      if (Number(body.size) !== end.size) return [`line ${end.line}: the signed end names ${body.size} rows, not ${end.size}`]
    } catch (err) {
      return [`line ${end.line}: the export's end does not verify with this key (${(err as Error).message})`]
    }
    return []
  }
}
