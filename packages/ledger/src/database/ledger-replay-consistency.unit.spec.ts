import { describe, expect, it } from 'vitest'
import type { LedgerRecord } from '@hookledger/core'
import { DeliveryHistoryCheck, EndpointHistoryCheck } from './ledger-replay-consistency.js'

const D = '11111111-1111-4111-8111-111111111111'
const E = '22222222-2222-4222-8222-222222222222'
const at = new Date('2030-01-01T00:00:00Z')

/** A delivery's history from short names, positions 1, 2, 3, … */
function history(...steps: (string | [string, Record<string, unknown>])[]): LedgerRecord[] {
  return steps.map((s, i) => {
    const [kind, payload] = typeof s === 'string' ? [s, {}] : s
    return {
      position: String(i + 1),
      occurred_at: at,
      owner_id: 'o',
      kind: kind.includes('.') ? kind : `delivery.${kind}`,
      endpoint_id: E,
      delivery_id: D,
      event_id: 'evt_1',
      actor: 'system',
      payload,
    } as LedgerRecord
  })
}
const attempted = (attempt: number, outcome: string, counted = outcome !== 'snoozed', run = 1): [string, Record<string, unknown>] => [
  'attempted',
  { attempt, counted, run, outcome },
]

function problems(entries: LedgerRecord[]): string[] {
  const out: string[] = []
  const check = new DeliveryHistoryCheck((position, problem) => out.push(`${position}: ${problem}`))
  check.start()
  for (const e of entries) check.apply(e)
  check.finish()
  return out
}

describe('ledger format 2: a 2xx attempt completes the delivery itself', () => {
  const completing = (attempt: number, run = 1): [string, Record<string, unknown>] => ['attempted', { attempt, counted: true, run, outcome: 'completed', completes: true }]
  it('accepts format 2 histories, and format 1 and 2 side by side in one history', () => {
    expect(problems(history('enqueued', 'claimed', completing(1)))).toEqual([])
    expect(problems(history('enqueued', 'claimed', attempted(1, 'retry_scheduled'), 'retry_scheduled', 'claimed', completing(2)))).toEqual([])
    expect(
      problems(history('enqueued', 'claimed', attempted(1, 'completed'), 'completed', ['redelivered', { run: 2, previous_run: 1, previous_attempts: 1 }], 'claimed', completing(1, 2))),
    ).toEqual([])
  })
  it.each<[string, (string | [string, Record<string, unknown>])[], RegExp]>([
    ['a completing attempt followed by delivery.completed', ['enqueued', 'claimed', completing(1), 'completed'], /delivery.completed without the attempt/],
    ['completes on a failed attempt', ['enqueued', 'claimed', ['attempted', { attempt: 1, counted: true, run: 1, outcome: 'retry_scheduled', completes: true }], 'retry_scheduled'], /says it completes the delivery/],
    ['completes: false', ['enqueued', 'claimed', ['attempted', { attempt: 1, counted: true, run: 1, outcome: 'completed', completes: false }], 'completed'], /says it completes the delivery/],
    ['a claim after completion', ['enqueued', 'claimed', completing(1), 'claimed'], /delivery.claimed while the delivery is completed/],
  ])('names %s', (_name, steps, problem) => {
    expect(problems(history(...steps)).join('\n')).toMatch(problem)
  })
})

describe('delivery history rules', () => {
  it('accept every path of the engine', () => {
    // retry, then success
    expect(problems(history('enqueued', 'claimed', attempted(1, 'retry_scheduled'), 'retry_scheduled', 'claimed', attempted(2, 'completed'), 'completed'))).toEqual([])
    // Retry-After snooze (uncounted, numbered with the count so far), busy lease, then success
    expect(
      problems(history('enqueued', 'claimed', attempted(0, 'snoozed'), 'snoozed', 'lease_busy', 'claimed', attempted(1, 'retry_scheduled'), 'retry_scheduled', 'claimed', attempted(1, 'snoozed'), 'snoozed', 'claimed', attempted(2, 'completed'), 'completed')),
    ).toEqual([])
    // the rescuer: interrupted (counted), retried; interrupted at the 18th, discarded
    expect(problems(history('enqueued', 'claimed', attempted(1, 'interrupted'), 'retry_scheduled', 'claimed', attempted(2, 'interrupted'), 'discarded'))).toEqual([])
    // discards at claim time, by a delete, after an egress refusal (uncounted) or a 4xx
    expect(problems(history('enqueued', 'discarded'))).toEqual([])
    expect(problems(history('enqueued', 'claimed', attempted(1, 'retry_scheduled'), 'retry_scheduled', 'discarded'))).toEqual([])
    expect(problems(history('enqueued', 'claimed', attempted(0, 'discarded', false), 'discarded'))).toEqual([])
    // a late outcome of a lost claim (kept, never applied) may land anywhere after the claim
    expect(
      problems(history('enqueued', 'claimed', attempted(1, 'interrupted'), 'settle_dropped', 'retry_scheduled', 'claimed', 'settle_dropped', attempted(2, 'completed'), 'completed', 'settle_dropped')),
    ).toEqual([])
    // redelivery: a new run numbers its attempts from 1 again
    expect(
      problems(history('enqueued', 'claimed', attempted(1, 'discarded'), 'discarded', ['redelivered', { run: 2, previous_run: 1, previous_attempts: 1 }], 'claimed', attempted(1, 'completed', true, 2), 'completed')),
    ).toEqual([])
  })

  it('notice a cut attempt: the claim before it is left without its attempt, and the count jumps', () => {
    expect(problems(history('enqueued', 'claimed', attempted(1, 'retry_scheduled'), 'retry_scheduled', 'claimed', 'claimed', attempted(3, 'completed'), 'completed'))).toEqual([
      '6: delivery.claimed while the delivery is running: a claim takes a pending or retryable delivery',
      '7: counted attempt 3 of run 1, the run has made 1: attempt 2 is missing',
    ])
  })

  it('want the history to start with delivery.enqueued, and only once', () => {
    expect(problems(history('claimed', attempted(1, 'completed'), 'completed'))).toEqual(['1: the history starts with delivery.claimed, not delivery.enqueued'])
    expect(problems(history('enqueued', 'enqueued'))).toEqual(['2: delivery.enqueued again (the delivery was enqueued at position 1)'])
  })

  it('want every attempt under a claim, followed by the entry its outcome names', () => {
    expect(problems(history('enqueued', attempted(1, 'completed'), 'completed'))).toEqual([
      '2: delivery.attempted does not follow a delivery.claimed (the delivery is pending)',
    ])
    expect(problems(history('enqueued', 'claimed', attempted(1, 'completed'), 'retry_scheduled'))).toEqual([
      '4: delivery.retry_scheduled follows the attempt at position 3 (outcome completed), which is followed by delivery.completed',
    ])
    expect(problems(history('enqueued', 'claimed', attempted(1, 'retry_scheduled')))).toEqual([
      '3: the attempt (outcome retry_scheduled) is the last entry: no delivery.retry_scheduled follows it',
    ])
    expect(problems(history('enqueued', 'completed'))).toEqual(['2: delivery.completed without the attempt it is the outcome of (the delivery is pending)'])
  })

  it('number attempts as decideDelivery does', () => {
    expect(problems(history('enqueued', 'claimed', attempted(1, 'retry_scheduled'), 'retry_scheduled', 'claimed', attempted(1, 'completed'), 'completed'))).toEqual([
      '6: counted attempt 1 of run 1, the run has made 1: a number repeats',
    ])
    expect(problems(history('enqueued', 'claimed', attempted(1, 'snoozed'), 'snoozed'))).toEqual(['3: uncounted attempt numbered 1, the run has made 0'])
    expect(problems(history('enqueued', 'claimed', attempted(0, 'snoozed', true), 'snoozed'))).toEqual([
      '3: a counted attempt with outcome snoozed, which is always uncounted',
      '3: counted attempt 0 of run 1, the run has made 0: a number repeats',
    ])
    expect(problems(history('enqueued', 'claimed', attempted(1, 'completed', true, 2), 'completed'))).toEqual(['3: attempt of run 2 during run 1'])
  })

  it('want a redelivery to start the next run of a discarded delivery', () => {
    expect(problems(history('enqueued', 'claimed', attempted(1, 'discarded'), 'discarded', ['redelivered', { run: 3, previous_run: 1, previous_attempts: 0 }]))).toEqual([
      '5: delivery.redelivered starts run 3, the next is 2',
      '5: delivery.redelivered names 0 previous attempts, run 1 made 1',
    ])
    expect(problems(history('enqueued', ['redelivered', { run: 2, previous_run: 1, previous_attempts: 0 }]))).toEqual([
      '2: delivery.redelivered while the delivery is pending: only a completed or discarded delivery is redelivered',
    ])
  })

  it('accept a retirement of a settled delivery, and a new life of its id after it', () => {
    const retired: [string, Record<string, unknown>] = ['deliveries.retired', { count: 1, cutoff: at.toISOString() }]
    expect(problems(history('enqueued', 'claimed', attempted(1, 'completed'), 'completed', retired))).toEqual([])
    expect(problems(history('enqueued', 'discarded', retired))).toEqual([])
    expect(problems(history('enqueued', 'discarded', retired, 'enqueued', 'claimed', attempted(1, 'completed'), 'completed'))).toEqual([])
  })

  it('want only settled deliveries retired, and nothing but a new enqueue after it', () => {
    const retired: [string, Record<string, unknown>] = ['deliveries.retired', { count: 1, cutoff: at.toISOString() }]
    expect(problems(history('enqueued', retired))).toEqual([
      '2: deliveries.retired while the delivery is pending: only a completed or discarded delivery is retired',
    ])
    expect(problems(history('enqueued', 'claimed', retired))).toEqual([
      '3: deliveries.retired while the delivery is running: only a completed or discarded delivery is retired',
    ])
    expect(problems(history('enqueued', 'discarded', retired, 'claimed'))).toEqual(['4: delivery.claimed after the delivery was retired'])
  })

  it('want every entry to name the delivery\'s endpoint, event and owner', () => {
    const h = history('enqueued', 'claimed')
    expect(problems([h[0]!, { ...h[1]!, endpoint_id: D, event_id: 'evt_2' }])).toEqual([
      `2: delivery.claimed names endpoint ${D}, the delivery's is ${E}`,
      "2: delivery.claimed names event evt_2, the delivery's is evt_1",
    ])
  })
})

describe('endpoint history rules', () => {
  const check = (...kinds: string[]) => {
    const out: string[] = []
    const c = new EndpointHistoryCheck((position, problem) => out.push(`${position}: ${problem}`))
    c.start()
    history(...kinds.map((k) => (k.startsWith('endpoint.') ? k : `delivery.${k}`))).forEach((e) => c.apply(e))
    c.finish()
    return out
  }
  it('accept a lease released after the delete (an attempt in flight settles normally)', () => {
    expect(check('endpoint.created', 'endpoint.updated', 'claimed', 'endpoint.deleted', 'attempted', 'discarded')).toEqual([])
  })
  it('want endpoint.created first and once, and nothing but lease entries after endpoint.deleted', () => {
    expect(check('claimed', 'endpoint.created')).toEqual(['1: the history starts with delivery.claimed, not endpoint.created'])
    expect(check('endpoint.created', 'endpoint.created')).toEqual(['2: endpoint.created again (the endpoint was created at position 1)'])
    expect(check('endpoint.created', 'endpoint.deleted', 'endpoint.updated')).toEqual(['3: endpoint.updated after endpoint.deleted (at position 2)'])
  })
  it('accept a purge after the delete, and nothing after the purge', () => {
    expect(check('endpoint.created', 'claimed', 'endpoint.deleted', 'attempted', 'endpoint.purged')).toEqual([])
    expect(check('endpoint.created', 'endpoint.purged')).toEqual(['2: endpoint.purged of an endpoint that was never deleted'])
    expect(check('endpoint.created', 'endpoint.deleted', 'endpoint.purged', 'claimed')).toEqual(['4: delivery.claimed after endpoint.purged (position 3)'])
  })
})
