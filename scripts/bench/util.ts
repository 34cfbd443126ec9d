/** Small helpers every scenario uses: time, statistics, waiting, and progress on stderr. */

export const wall = () => performance.timeOrigin + performance.now()
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))
export const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[i]!
}
/** The p-th percentile of unsorted millisecond samples, rounded; 0 when there are none. */
export const percentileMs = (values: readonly number[], p: number) =>
  values.length === 0 ? 0 : Math.round(percentile([...values].sort((a, b) => a - b), p))
export const median = (xs: readonly number[]) =>
  percentile(
    [...xs].sort((a, b) => a - b),
    50,
  )

export async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | null>, everyMs = 20): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = await probe()
    if (v !== null) return v
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await sleep(everyMs)
  }
}

export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let t: NodeJS.Timeout | undefined
  return Promise.race([
    p,
    new Promise<T>((_, reject) => (t = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms))),
  ]).finally(() => clearTimeout(t))
}

export const log = (line: string) => process.stderr.write(`[bench] ${line}\n`)

/** How many ms `fn` takes. */
export async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const t = performance.now()
  const value = await fn()
  return { value, ms: performance.now() - t }
}

/**
 * What a running scenario is doing, on stderr: each phase when it begins, and every few
 * seconds while it lasts (with `detail()`, e.g. how many deliveries arrived), so a long full
 * run never looks hung. Nothing goes to stdout, which carries the results.
 */
export class Progress {
  static readonly EVERY_MS = 5_000
  #scenario: string
  #phase = ''
  #phaseStarted = 0
  #detail: (() => Promise<string> | string) | null = null
  #timer: NodeJS.Timeout | null = null

  constructor(scenario: string) {
    this.#scenario = scenario
  }

  phase(what: string, detail?: () => Promise<string> | string): void {
    this.#phase = what
    this.#phaseStarted = performance.now()
    this.#detail = detail ?? null
    log(`${this.#scenario}: ${what}`)
    // Ticks count from the phase's start.
    this.stop()
    this.#timer = setInterval(() => void this.#tick(), Progress.EVERY_MS)
    this.#timer.unref()
  }

  async #tick(): Promise<void> {
    if (!this.#phase) return
    const seconds = Math.round((performance.now() - this.#phaseStarted) / 1000)
    let detail = ''
    try {
      detail = this.#detail ? ` (${await this.#detail()})` : ''
    } catch {
      // a probe that fails (a database being dropped) only loses its detail
    }
    log(`${this.#scenario}: ${this.#phase}… ${seconds} s${detail}`)
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer)
    this.#timer = null
  }
}
