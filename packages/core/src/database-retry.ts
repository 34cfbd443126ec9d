import type { DatabaseErrorClass } from './database-error.js'

/**
 * How long a unit of work (a claim pass, a settle batch, a fan-out, a seal) waits before it is
 * tried again after a database error, by the error's class and how many times in a row it has
 * failed (1-based). Full jitter, so workers that lost the database together do not come back
 * in lockstep:
 *
 * - `retryable` (serialization failure, deadlock, lock timeout): soon — 1 to 20 ms × n, for
 *   n ≤ 10, then given up;
 * - `unavailable` (connection lost, database starting or shutting down): a step doubling from
 *   250 ms to 5 s, waited half fixed and half at random; never given up while the process runs (the outage ends or the
 *   operator stops it);
 * - `permanent` (a bug or bad data): up to 5 tries, 100 ms × n apart, then given up.
 *
 * `null` means stop retrying. `random` is [0, 1), injected so the table is testable.
 */
export function databaseRetryDelayMs(errorClass: DatabaseErrorClass, failures: number, random: () => number = Math.random): number | null {
  if (!Number.isInteger(failures) || failures < 1) throw new RangeError(`failures must be a positive integer, got ${failures}`)
  switch (errorClass) {
    case 'retryable':
      return failures > RETRYABLE_TRIES ? null : Math.floor(random() * 20 * failures) + 1
    case 'unavailable': {
      // Equal jitter: half the step fixed (never a hot loop), half random.
      const step = Math.min(UNAVAILABLE_CAP_MS, UNAVAILABLE_FLOOR_MS * 2 ** Math.min(failures - 1, 30))
      return Math.floor(step / 2 + (random() * step) / 2)
    }
    case 'permanent':
      return failures >= PERMANENT_TRIES ? null : 100 * failures
  }
}

export const RETRYABLE_TRIES = 10
export const PERMANENT_TRIES = 5
export const UNAVAILABLE_FLOOR_MS = 250
export const UNAVAILABLE_CAP_MS = 5_000
