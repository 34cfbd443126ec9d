import { describe, expect, it } from 'vitest'
import { AttemptTimeoutsError, deriveAttemptTimeouts } from './attempt-timeouts.js'

describe('deriveAttemptTimeouts: HTTP timeout < job timeout < lease', () => {
  it.each([
    [{ jobTimeoutMs: 15_000 }, { httpTimeoutMs: 10_000, jobTimeoutMs: 15_000, leaseMs: 17_000 }],
    [{ jobTimeoutMs: 1_000 }, { httpTimeoutMs: 666, jobTimeoutMs: 1_000, leaseMs: 3_000 }],
    [{ jobTimeoutMs: 6_000 }, { httpTimeoutMs: 4_000, jobTimeoutMs: 6_000, leaseMs: 8_000 }],
    [{ jobTimeoutMs: 600_000 }, { httpTimeoutMs: 10_000, jobTimeoutMs: 600_000, leaseMs: 602_000 }],
    [{ jobTimeoutMs: 60_000, httpTimeoutMs: 45_000 }, { httpTimeoutMs: 45_000, jobTimeoutMs: 60_000, leaseMs: 62_000 }],
  ])('%j → %j', (input, expected) => {
    const t = deriveAttemptTimeouts(input)
    expect(t).toEqual(expected)
    expect(t.httpTimeoutMs).toBeLessThan(t.jobTimeoutMs)
    expect(t.jobTimeoutMs).toBeLessThan(t.leaseMs)
  })
  it.each([
    [{ jobTimeoutMs: 15_000, httpTimeoutMs: 15_000 }, 'HOOKLEDGER_HTTP_TIMEOUT_SECONDS', /shorter than the job timeout/],
    [{ jobTimeoutMs: 15_000, httpTimeoutMs: 20_000 }, 'HOOKLEDGER_HTTP_TIMEOUT_SECONDS', /shorter than the job timeout/],
    [{ jobTimeoutMs: 500 }, 'HOOKLEDGER_JOB_TIMEOUT_SECONDS', /at least 1 s/],
    [{ jobTimeoutMs: 15_000, httpTimeoutMs: 0 }, 'HOOKLEDGER_HTTP_TIMEOUT_SECONDS', /positive/],
  ])('refuses %j, naming %s', (input, setting, message) => {
    let error: unknown
    try {
      deriveAttemptTimeouts(input)
    } catch (err) {
      error = err
    }
    expect(error).toBeInstanceOf(AttemptTimeoutsError)
    expect((error as AttemptTimeoutsError).setting).toBe(setting)
    expect((error as Error).message).toMatch(message)
  })
})
