import { createHash, type Hash } from 'node:crypto'
import { canonicalJson } from '@hookledger/core'

/** The projections a snapshot holds, in the order their rows are hashed. */
export type SnapshotEntity = 'endpoint' | 'delivery'

const LINE_TAG = 'hookledger.snapshot.v1'

/**
 * The digest a checkpoint signs for a projection snapshot: SHA-256 over one line per row,
 * endpoints then deliveries, each by id ascending — the UTF-8 of
 *
 *     canonical JSON of ["hookledger.snapshot.v1", entity, id, row] + "\n"
 *
 * where `row` is the row as `to_jsonb` renders it (what the snapshot stores). Rows must be
 * pushed in that order; a row out of order throws, since the digest would not be reproducible.
 */
export class SnapshotDigest {
  readonly #hash: Hash = createHash('sha256')
  readonly counts: Record<SnapshotEntity, number> = { endpoint: 0, delivery: 0 }
  #last: { entity: SnapshotEntity; id: string } | null = null

  push(entity: SnapshotEntity, id: string, row: unknown): void {
    const last = this.#last
    if (last !== null && (entityRank(entity) < entityRank(last.entity) || (entity === last.entity && id <= last.id))) {
      throw new Error(`snapshot rows out of order: ${entity} ${id} after ${last.entity} ${last.id}`)
    }
    this.#last = { entity, id }
    this.#hash.update(canonicalJson([LINE_TAG, entity, id, row]) + '\n')
    this.counts[entity]++
  }

  /** Lowercase hex; the digest is final once read. */
  hex(): string {
    return this.#hash.digest('hex')
  }
}

const entityRank = (entity: SnapshotEntity) => (entity === 'endpoint' ? 0 : 1)
