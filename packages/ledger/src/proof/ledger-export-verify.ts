import { LedgerChainVerifier, type ChainVerification, type LedgerChainVerifierOptions } from './ledger-chain-verifier.js'

/**
 * Verifies a ledger export (JSON lines, as `ledger export` writes them) with the public key
 * alone, one line at a time: header, then the anchor checkpoint when the export does not start
 * at the ledger's beginning, then each checkpoint with its sealed leaves followed by its rows.
 * A line that is not valid JSON or of no known type is a finding, not an exception.
 */
export class LedgerExportVerifier {
  readonly #chain: LedgerChainVerifier
  readonly #malformed: string[] = []
  #line = 0
  #sawHeader = false

  constructor(options: LedgerChainVerifierOptions) {
    this.#chain = new LedgerChainVerifier(options)
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
          if (line.format !== 'hookledger.ledger-export.v1') this.#malformed.push(`line ${this.#line}: unknown export format ${JSON.stringify(line.format)}`)
          this.#sawHeader = true
          return
        case 'anchor':
          this.#chain.pushAnchor(line.checkpoint as never)
          return
        case 'checkpoint': {
          const leaves = line.leaves as { positions: string[]; hashes: string[] }
          this.#chain.pushCheckpoint(line.checkpoint as never, {
            positions: leaves.positions,
            hashes: leaves.hashes.map((h) => Uint8Array.from(Buffer.from(h, 'hex'))),
          })
          return
        }
        case 'row':
          this.#chain.pushRow(line.row as never)
          return
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
    return { ...result, ok: result.ok && malformed.length === 0, malformed }
  }
}
