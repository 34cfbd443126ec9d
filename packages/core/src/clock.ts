/**
 * The one source of "now". Every time-dependent rule takes a Clock, SQL included (the store
 * passes `clock.now()` as a parameter; business SQL never calls `now()`), so tests can
 * fast-forward the 5.3-day retry schedule in milliseconds.
 */
export interface Clock {
  now(): Date
}

/** The wall clock, used only by the composition root. */
export const systemClock: Clock = Object.freeze({ now: () => new Date() })
