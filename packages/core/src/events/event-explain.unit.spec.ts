import { describe, expect, it } from 'vitest'
import { explainVerdict, type ExplainEndpointFacts, type FanoutVerdictInput } from './event-explain.js'

const decision: FanoutVerdictInput = { type: 'booking.created', matched: ['a'], denied: [{ endpoint_id: 'b', reason: 'corpus: private' }] }
const live = { enabled: true, deleted_at: null, event_types: ['booking.*'], disabled_reason: null }
const ep = (id: string, over: Partial<ExplainEndpointFacts> = {}): ExplainEndpointFacts => ({ id, at_decision: live, delivery: null, delivery_id: `d_${id}`, ...over })

describe('explainVerdict', () => {
  const cases: [string, FanoutVerdictInput | null, ExplainEndpointFacts, unknown][] = [
    ['a delivery: its state and id', decision, ep('a', { delivery: { id: 'd_a', state: 'discarded', retired: false } }), { verdict: 'discarded', delivery_id: 'd_a', retired: false }],
    ['a retired delivery says so', decision, ep('a', { delivery: { id: 'd_a', state: 'completed', retired: true } }), { verdict: 'completed', delivery_id: 'd_a', retired: true }],
    ['matched, no delivery known', decision, ep('a'), { verdict: 'matched', delivery_id: 'd_a' }],
    ['scope denied, with the reason', decision, ep('b'), { verdict: 'scope_denied', reason: 'corpus: private' }],
    ['not subscribed: its globs', decision, ep('c', { at_decision: { ...live, event_types: ['invoice.*'] } }), { verdict: 'not_subscribed', event_types: ['invoice.*'] }],
    ['disabled then', decision, ep('c', { at_decision: { ...live, enabled: false, disabled_reason: 'disabled_by_owner' } }), { verdict: 'endpoint_disabled', reason: 'disabled_by_owner' }],
    ['deleted then', decision, ep('c', { at_decision: { ...live, deleted_at: new Date() } }), { verdict: 'endpoint_deleted' }],
    ['created after the decision', decision, ep('c', { at_decision: null }), { verdict: 'created_after_event' }],
    ['not fanned out yet', null, ep('c'), { verdict: 'not_fanned_out_yet' }],
    ['an internal event', { ...decision, matched: [], skipped_internal: true }, ep('c'), { verdict: 'internal_event', reason: expect.stringContaining('"booking.created" had exposure internal') }],
    ['subscribed and enabled but not chosen (a test for another endpoint)', decision, ep('c'), { verdict: 'not_addressed' }],
  ]
  it.each(cases)('%s', (_, d, facts, expected) => expect(explainVerdict(d, facts)).toEqual(expected))
})
