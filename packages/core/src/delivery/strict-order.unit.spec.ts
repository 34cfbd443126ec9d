import { describe, expect, it } from 'vitest'
import { strictBlocker, strictHead, strictHeadClaimable, strictlyBefore, type OrderedDelivery } from './strict-order.js'
import type { DeliveryState } from '../model/projections.js'

const T0 = Date.parse('2026-03-01T00:00:00Z')
const at = (s: number) => new Date(T0 + s * 1000)
const d = (id: string, occurredS: number | null, state: DeliveryState = 'pending', nextS: number | null = 0, event_id = `evt_${id}`): OrderedDelivery => ({
  id,
  state,
  next_attempt_at: nextS === null ? null : at(nextS),
  occurred_at: occurredS === null ? null : at(occurredS),
  event_id,
})

describe('strict order: the line of an endpoint', () => {
  it('orders by occurred_at, then event id, then delivery id; a pruned event first', () => {
    expect(strictlyBefore(d('a', 1), d('b', 2))).toBe(true)
    expect(strictlyBefore(d('b', 2), d('a', 1))).toBe(false)
    expect(strictlyBefore(d('x', 1, 'pending', 0, 'evt_1'), d('y', 1, 'pending', 0, 'evt_2'))).toBe(true)
    expect(strictlyBefore(d('x', null), d('y', 0))).toBe(true)
  })

  const cases: { name: string; line: OrderedDelivery[]; head: string | null; claimable: boolean; blockedOf?: [string, string | null] }[] = [
    { name: 'nothing live: no head', line: [d('a', 1, 'completed', null), d('b', 2, 'discarded', null)], head: null, claimable: false },
    { name: 'the earliest pending is the head, whatever the due times', line: [d('b', 2, 'pending', 0), d('a', 1, 'pending', 5)], head: 'a', claimable: false, blockedOf: ['b', 'a'] },
    { name: 'completed and discarded ones do not block', line: [d('a', 1, 'completed', null), d('b', 2, 'discarded', null), d('c', 3)], head: 'c', claimable: true, blockedOf: ['c', null] },
    { name: 'a failing head in backoff blocks the rest', line: [d('a', 1, 'retryable', 300), d('b', 2), d('c', 3)], head: 'a', claimable: false, blockedOf: ['c', 'a'] },
    { name: 'a running head (its lease) blocks the rest', line: [d('a', 1, 'running', 0), d('b', 2)], head: 'a', claimable: false, blockedOf: ['b', 'a'] },
    { name: 'a redelivered earlier one blocks later ones again', line: [d('a', 1, 'pending', 0), d('b', 2, 'completed', null), d('c', 3, 'pending', 0)], head: 'a', claimable: true, blockedOf: ['c', 'a'] },
  ]
  for (const t of cases) {
    it(t.name, () => {
      const head = strictHead(t.line)
      expect(head?.id ?? null).toBe(t.head)
      expect(strictHeadClaimable(head, at(0))).toBe(t.claimable)
      if (t.blockedOf) {
        const [who, by] = t.blockedOf
        expect(strictBlocker(t.line.find((x) => x.id === who)!, t.line)?.id ?? null).toBe(by)
      }
    })
  }
})
