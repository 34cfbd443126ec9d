/**
 * Several sorted row streams read as one, in the same order: each source is a server-side
 * cursor (server-cursor.ts) whose query is ordered by the same key; the merge always hands out
 * the smallest head. Replay merges a table's ordinary entries with the expanded retirements
 * this way, so PostgreSQL never has to sort the whole ledger to interleave them.
 */
import type { ServerCursor } from './server-cursor.js'

/** What the replay's stream reader needs of a cursor (ServerCursor has it). */
export interface RowCursor<T> {
  head(): T | undefined
  advance(): void
  readonly needsFetch: boolean
  fill(): Promise<void>
  close(): Promise<void>
}

export class MergedCursor<T> implements RowCursor<T> {
  readonly #sources: readonly ServerCursor<T>[]
  readonly #compare: (a: T, b: T) => number
  /** The source whose head is the merged head (found again after every advance or fill). */
  #current: ServerCursor<T> | undefined

  constructor(sources: readonly ServerCursor<T>[], compare: (a: T, b: T) => number) {
    this.#sources = sources
    this.#compare = compare
  }

  /** True while any source's batch in hand is used up: the smallest head is not known before. */
  get needsFetch(): boolean {
    return this.#sources.some((s) => s.needsFetch)
  }

  async fill(): Promise<void> {
    await Promise.all(this.#sources.filter((s) => s.needsFetch).map((s) => s.fill()))
    this.#current = undefined
  }

  head(): T | undefined {
    this.#current ??= this.#smallest()
    return this.#current?.head()
  }

  advance(): void {
    ;(this.#current ?? this.#smallest())?.advance()
    this.#current = undefined
  }

  #smallest(): ServerCursor<T> | undefined {
    let best: ServerCursor<T> | undefined
    let bestRow: T | undefined
    for (const s of this.#sources) {
      const row = s.head()
      if (row !== undefined && (bestRow === undefined || this.#compare(row, bestRow) < 0)) {
        best = s
        bestRow = row
      }
    }
    return best
  }

  async close(): Promise<void> {
    for (const s of this.#sources) await s.close()
  }
}

/** Bigint positions as decimal text, compared as numbers (no leading zeros: longer is larger). */
export function comparePositions(a: string, b: string): number {
  return a.length !== b.length ? a.length - b.length : a < b ? -1 : a > b ? 1 : 0
}
