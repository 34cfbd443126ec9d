import type { Clock } from '@hookledger/core'

/** A clock tests move by hand: days pass in microseconds. */
export class FakeClock implements Clock {
  #now: number
  constructor(start: Date | string = '2026-01-01T00:00:00.000Z') {
    this.#now = new Date(start).getTime()
  }
  now(): Date {
    return new Date(this.#now)
  }
  set(at: Date | string | number): void {
    this.#now = new Date(at).getTime()
  }
  advance(ms: number): Date {
    this.#now += ms
    return this.now()
  }
}
