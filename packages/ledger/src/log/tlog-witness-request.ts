import { parseDecimal } from './bytes.js'

/**
 * The log's side of C2SP tlog-witness `add-checkpoint`: the request body (the old size the log
 * believes the witness holds, the consistency proof from it, a blank line, the checkpoint) and
 * the 409 answer's `text/x.tlog.size` body (the size the witness really holds).
 */

/** Most proof lines a client may send (the spec's limit). */
export const MAX_WITNESS_PROOF_LINES = 63

export function addCheckpointRequestBody(oldSize: number | bigint, proof: readonly Uint8Array[], note: string): string {
  if (proof.length > MAX_WITNESS_PROOF_LINES) throw new RangeError(`a consistency proof of ${proof.length} hashes is longer than a witness accepts`)
  if (BigInt(oldSize) === 0n && proof.length > 0) throw new RangeError('a proof from the empty tree is empty')
  const lines = [`old ${BigInt(oldSize).toString()}`, ...proof.map((h) => Buffer.from(h).toString('base64'))]
  return lines.join('\n') + '\n\n' + note
}

/** The size in a 409's `text/x.tlog.size` body, or null when it is not one decimal line. */
export function parseTlogSize(body: string): bigint | null {
  const m = /^(0|[1-9][0-9]*)\n$/.exec(body)
  return m ? parseDecimal(m[1]!, 2n ** 64n - 1n) : null
}
