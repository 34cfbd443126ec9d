/**
 * The default number of endpoints one worker process serves at once (`HOOKLEDGER_CONCURRENCY`),
 * from the cores it has. Pure: the composition root passes `os.availableParallelism()`.
 *
 * Why per core: one endpoint's cycle is bounded by its settle's transaction (the pipelined lease
 * claims its next delivery there), not by the process, so a drain is as fast as the endpoints it
 * keeps in flight until the cores are full. A core delivers ~1,300/s on the bench's VM, which
 * endpoints answering in ~50 ms need ~64 in flight to feed. A slot costs a socket and one capped
 * response, never a database connection (settles are batched). Measured on 2 cores
 * (performance.md): 64 slots drained 100 endpoints at 0.72–0.92 of the in-process drain, 128 at
 * 0.98–1.05; 256 gave a flooding owner so much of the machine that a quiet owner's p99 rose
 * further (4.6× alone, against 3.1–3.6× at 128), so more is not free either.
 */
export const CONCURRENCY_PER_CORE = 64
export const CONCURRENCY_DEFAULT_MAX = 1024

export function concurrencyDefault(cores: number): number {
  const n = Number.isFinite(cores) && cores >= 1 ? Math.floor(cores) : 1
  return Math.min(CONCURRENCY_DEFAULT_MAX, n * CONCURRENCY_PER_CORE)
}
