/**
 * Free slots held by claims in progress. The producer's claim and the fan-out's (which leases
 * what it just enqueued, in its own transaction) run side by side; each holds every slot free
 * when it starts, down to what it picked once it has weighed the candidates, until it ends. So
 * the two never take more than the free slots between them, and neither waits for the other.
 */
export class SlotHolds {
  #held = 0

  /** `unheld`: the slots free before any hold (the concurrency less the turns in flight). */
  constructor(private readonly unheld: () => number) {}

  /** Holds every free slot for one claim; null when none is free. */
  hold(): SlotHold | null {
    let mine = this.unheld() - this.#held
    if (mine <= 0) return null
    this.#held += mine
    return {
      limit: mine,
      picked: (n: number) => {
        const keep = Math.min(mine, Math.max(0, n))
        this.#held -= mine - keep
        mine = keep
      },
      release: () => {
        this.#held -= mine
        mine = 0
      },
    }
  }
}

/** One claim's hold on free slots. */
export interface SlotHold {
  readonly limit: number
  /** The claim will fill at most `n` of them: the rest are free again. */
  picked(n: number): void
  /** The claim ended, and what it claimed is in flight (counted by `unheld`). */
  release(): void
}

/**
 * Runs a claim under its hold: what it claimed goes in flight (`launch`) before the hold lets go
 * of its slots, so no other claim sees them free between; a claim that fails lets go at once.
 */
export async function claimUnderHold<T>(hold: Pick<SlotHold, 'release'>, claim: () => Promise<T>, launch: (result: T) => void): Promise<T> {
  try {
    const result = await claim()
    launch(result)
    return result
  } finally {
    hold.release()
  }
}
