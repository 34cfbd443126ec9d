import {
  addCheckpointRequestBody,
  addNoteSignatures,
  consistencyProofFromTiles,
  cosignatureVerifier,
  databaseTileReader,
  latestTreeNote,
  ledgerCosignatureAdd,
  openNote,
  parseTlogSize,
  type PolicyWitness,
} from '@hookledger/ledger'
import type { Db } from '@hookledger/store'
import type { Clock, Logger } from '@hookledger/core'

/** What one witness did with the newest checkpoint. */
export type WitnessOutcome =
  | { readonly witness: string; readonly outcome: 'cosigned'; readonly size: number }
  | { readonly witness: string; readonly outcome: 'failed'; readonly reason: string }
  | { readonly witness: string; readonly outcome: 'rolled_back'; readonly witnessSize: number; readonly logSize: number }

export interface WitnessSubmitterOptions {
  readonly db: Db
  /** The policy's witnesses that have a submission URL. */
  readonly witnesses: readonly PolicyWitness[]
  readonly clock: Clock
  readonly logger?: Logger
  readonly timeoutMs?: number
  /** Each outcome, for metrics. */
  readonly onOutcome?: (o: WitnessOutcome) => void
}

/**
 * The log's side of tlog-witness: after each checkpoint, submits the newest one to every
 * witness (`add-checkpoint`, old size + consistency proof from the tiles), follows a 409 to the
 * size the witness holds, keeps the cosignature it answers (verified with the witness's key).
 * A witness that refuses or is down is an outcome to count and log; it never blocks delivery.
 * A witness that holds a larger tree than the log means the log was rolled back (a restored
 * backup, deleted rows): `rolledBack` is set, and the sealer signs nothing new while it is.
 */
export class WitnessSubmitter {
  readonly #o: WitnessSubmitterOptions
  /** The size each witness last cosigned, as far as this process knows (0 until it has asked). */
  readonly #known = new Map<string, number>()
  #rolledBack: string | null = null

  constructor(options: WitnessSubmitterOptions) {
    this.#o = options
  }

  /** Why the sealer must not sign (a witness holds more than the log), or null. */
  get rolledBack(): string | null {
    return this.#rolledBack
  }

  /** Submits the newest checkpoint to every witness, together. */
  async submit(): Promise<WitnessOutcome[]> {
    const head = await latestTreeNote(this.#o.db)
    if (!head) return []
    const outcomes = await Promise.all(this.#o.witnesses.map((w) => this.#submitTo(w, head.size, head.note)))
    for (const o of outcomes) this.#o.onOutcome?.(o)
    return outcomes
  }

  async #submitTo(w: PolicyWitness, size: number, note: string): Promise<WitnessOutcome> {
    const fail = (reason: string): WitnessOutcome => {
      this.#o.logger?.warn({ witness: w.name, size, reason }, 'witness:failed')
      return { witness: w.name, outcome: 'failed', reason }
    }
    // Twice at most: a 409 names the size the witness holds, and the second request starts there.
    for (let round = 0; round < 2; round++) {
      const old = this.#known.get(w.name) ?? 0
      if (old > size) return this.#rollback(w, old, size)
      let body: string
      try {
        const proof = old === 0 || old === size ? [] : await consistencyProofFromTiles(old, size, databaseTileReader(this.#o.db))
        body = addCheckpointRequestBody(old, proof, note)
      } catch (err) {
        return fail(`cannot build the request: ${(err as Error).message}`)
      }
      let res: Response
      let text: string
      try {
        res = await fetch(`${w.url!.replace(/\/+$/, '')}/add-checkpoint`, {
          method: 'POST',
          body,
          headers: { 'content-type': 'text/plain; charset=utf-8' },
          signal: AbortSignal.timeout(this.#o.timeoutMs ?? 5_000),
        })
        text = await res.text()
      } catch (err) {
        return fail(`unreachable: ${(err as Error).message}`)
      }
      if (res.status === 409) {
        const held = parseTlogSize(text)
        if (held === null) return fail('409 without a text/x.tlog.size body')
        this.#known.set(w.name, Number(held))
        if (Number(held) > size) return this.#rollback(w, Number(held), size)
        continue
      }
      if (res.status !== 200) return fail(`HTTP ${res.status}: ${text.slice(0, 200).trim()}`)
      const lines = text.split('\n').filter((l) => l.length > 0)
      const verifier = cosignatureVerifier(w.key)
      let mine: string[]
      try {
        const opened = openNote(addNoteSignatures(note, lines), [verifier], { requireVerified: false })
        mine = opened.signatures.filter((s) => s.verified === true && s.verifier === verifier).map((s) => s.line)
      } catch (err) {
        return fail(`its answer does not verify: ${(err as Error).message}`)
      }
      if (mine.length === 0) return fail('no cosignature by its key in the answer')
      await ledgerCosignatureAdd(this.#o.db, { treeSize: size, witness: w.name, line: mine[0]!, at: this.#o.clock.now() })
      this.#known.set(w.name, size)
      return { witness: w.name, outcome: 'cosigned', size }
    }
    return fail('the size it holds kept changing')
  }

  #rollback(w: PolicyWitness, held: number, size: number): WitnessOutcome {
    this.#rolledBack = `witness ${w.name} has cosigned a tree of ${held} rows, but the log's newest checkpoint has ${size}: the log was rolled back (a restored backup or deleted rows). The sealer signs nothing new until an operator restores the history or starts a new log`
    this.#o.logger?.error({ witness: w.name, witness_size: held, log_size: size }, 'witness:log_rolled_back')
    return { witness: w.name, outcome: 'rolled_back', witnessSize: held, logSize: size }
  }
}
