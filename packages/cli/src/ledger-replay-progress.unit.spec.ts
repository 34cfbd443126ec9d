import { describe, expect, it } from 'vitest'
import { replayProgressLine } from './commands.js'

describe('ledger replay progress', () => {
  it('says how far, how fast and how long is left', () => {
    expect(replayProgressLine({ phase: 'deliveries', rows: 1_200_000, entities: 250_000, ms: 20_000, estimatedRows: 6_000_000 })).toBe(
      'ledger replay: deliveries, 1,200,000 of ~6,000,000 ledger entries folded, 250,000 rows compared (60,000 entries/s), ~1 min 20 s left',
    )
    expect(replayProgressLine({ phase: 'endpoints', rows: 0, entities: 0, ms: 4_000, estimatedRows: 9_000 })).toBe(
      'ledger replay: endpoints, 0 of ~9,000 ledger entries folded, 0 rows compared (0 entries/s)',
    )
    // the estimate is statistics, not a count: once passed, it is not shown as the total
    expect(replayProgressLine({ phase: 'deliveries', rows: 10_000, entities: 1, ms: 2_000, estimatedRows: 9_000 })).toBe(
      'ledger replay: deliveries, 10,000 of ~10,000 ledger entries folded, 1 rows compared (5,000 entries/s), finishing',
    )
    expect(replayProgressLine({ phase: 'deliveries', rows: 10, entities: 1, ms: 2_000, estimatedRows: null })).toBe(
      'ledger replay: deliveries, 10 ledger entries folded, 1 rows compared (5 entries/s)',
    )
  })
})
