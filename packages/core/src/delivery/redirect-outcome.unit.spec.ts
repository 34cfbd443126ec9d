/** What a redirect the transport did not follow means for the delivery (`classifyAttempt`). */
import { describe, expect, it } from 'vitest'
import { classifyAttempt, type AttemptFacts } from './delivery-decider.js'
import type { AttemptResult } from './attempt-result.js'

const T0 = new Date('2026-01-01T00:00:00.000Z')
const delivery = { attempts: 0, run_started_at: T0, snoozes: 0, snoozed_ms: 0 }
const facts: AttemptFacts = { started_at: T0, duration_ms: 3, status_code: 302, error: 'HTTP 302', signed_with: ['k1'] }
const answer = (redirectRefused?: { location: string; reason: 'cross_origin' | 'not_followed' }): AttemptResult => ({
  kind: 'response',
  status: 302,
  retryAfter: null,
  bodyExcerpt: '',
  durationMs: 3,
  address: '127.0.0.1',
  ...(redirectRefused && { redirectRefused }),
})

describe('a redirect that is not followed', () => {
  it.each([
    ['to another origin', answer({ location: 'https://elsewhere.example/in', reason: 'cross_origin' }), 'discarded', 'redirect_cross_origin'],
    ['of an endpoint with follow_redirects none', answer({ location: 'http://127.0.0.1:9/next', reason: 'not_followed' }), 'discarded', 'redirect_not_followed'],
    ['a 3xx without a usable Location (no redirect to refuse)', answer(), 'retry_scheduled', undefined],
  ] as const)('%s', (_, result, type, reason) => {
    const outcome = classifyAttempt(delivery, result, facts, T0)
    expect(outcome.type).toBe(type)
    if (outcome.type === 'discarded') {
      expect(outcome.reason).toBe(reason)
      expect(outcome.counted).toBe(true)
      expect(outcome.detail).toContain('302 →')
    }
  })

  it('names the rule and the Location in the attempt error', () => {
    const outcome = classifyAttempt(delivery, answer({ location: 'http://127.0.0.1:9/next', reason: 'not_followed' }), facts, T0)
    expect(outcome.type === 'discarded' && outcome.attempt?.error).toBe(
      'redirect_not_followed: HTTP 302 to http://127.0.0.1:9/next (the endpoint\'s follow_redirects is "none")',
    )
  })
})
