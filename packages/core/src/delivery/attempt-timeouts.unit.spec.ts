import { describe, expect, it } from 'vitest'
import { AttemptTimeoutsError, deriveAttemptTimeouts, leaseLeftToSend, pipelinedSendAllowed } from './attempt-timeouts.js'

describe('deriveAttemptTimeouts: HTTP timeout < job timeout < lease (two attempts and a margin)', () => {
  it.each([
    [{ jobTimeoutMs: 15_000 }, { httpTimeoutMs: 10_000, jobTimeoutMs: 15_000, leaseMs: 32_000 }],
    [{ jobTimeoutMs: 1_000 }, { httpTimeoutMs: 666, jobTimeoutMs: 1_000, leaseMs: 4_000 }],
    [{ jobTimeoutMs: 6_000 }, { httpTimeoutMs: 4_000, jobTimeoutMs: 6_000, leaseMs: 14_000 }],
    [{ jobTimeoutMs: 600_000 }, { httpTimeoutMs: 10_000, jobTimeoutMs: 600_000, leaseMs: 1_202_000 }],
    [{ jobTimeoutMs: 60_000, httpTimeoutMs: 45_000 }, { httpTimeoutMs: 45_000, jobTimeoutMs: 60_000, leaseMs: 122_000 }],
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

describe('leaseLeftToSend: enough lease left to make the attempt', () => {
  const now = new Date('2026-01-01T00:00:00.000Z')
  const until = (ms: number) => new Date(now.getTime() + ms)
  it.each<[string, number, number, number, boolean]>([
    // lease left, job timeout, lease, send?
    ['a fresh claim (lease = job + 2 s)', 17_000, 15_000, 17_000, true],
    ['2 s late: the job would end with the lease', 15_000, 15_000, 17_000, false],
    ['3 s late', 14_000, 15_000, 17_000, false],
    ['lease no longer than the job (tests): any lease left', 1, 15_000, 15_000, true],
    ['lease no longer than the job: expired', 0, 15_000, 15_000, false],
  ])('%s → %s', (_name, left, job, lease, send) => {
    expect(leaseLeftToSend({ leaseUntil: until(left), now, jobTimeoutMs: job, leaseMs: lease })).toEqual({ send, leftMs: left })
  })
})

describe('pipelinedSendAllowed: the next delivery goes before the settle only after a 2xx and within the lease', () => {
  const now = new Date('2026-01-01T00:00:00.000Z')
  const until = (ms: number) => new Date(now.getTime() + ms)
  it.each<[string, boolean, number, boolean]>([
    // answered 2xx, lease left, send?
    ['2xx, a fresh two-attempt lease (32 s)', true, 32_000, true],
    ['2xx, one attempt and the margin left', true, 17_000, true],
    ['2xx, less than an attempt and the margin', true, 16_999, false],
    ['a failure: wait for its settle', false, 32_000, false],
  ])('%s → %s', (_name, completed, left, send) => {
    expect(pipelinedSendAllowed({ answeredCompleted: completed, leaseUntil: until(left), now, jobTimeoutMs: 15_000 })).toBe(send)
  })
})
