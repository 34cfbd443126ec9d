import { describe, expect, it } from 'vitest'
import { timestamptzJson } from './ledger-replay-row-json.js'

describe('timestamptzJson', () => {
  it('renders as to_jsonb does under TimeZone = UTC (the fraction trimmed)', () => {
    expect(timestamptzJson(new Date('2024-01-02T03:04:05.000Z'))).toBe('2024-01-02T03:04:05+00:00')
    expect(timestamptzJson(new Date('2024-01-02T03:04:05.100Z'))).toBe('2024-01-02T03:04:05.1+00:00')
    expect(timestamptzJson(new Date('2024-01-02T03:04:05.120Z'))).toBe('2024-01-02T03:04:05.12+00:00')
    expect(timestamptzJson(new Date('2024-01-02T03:04:05.123Z'))).toBe('2024-01-02T03:04:05.123+00:00')
    expect(timestamptzJson(new Date('0999-12-31T23:59:59.001Z'))).toBe('0999-12-31T23:59:59.001+00:00')
    expect(timestamptzJson(new Date(Number.NaN))).toBeNull()
    expect(typeof timestamptzJson(new Date('+012345-01-01T00:00:00Z'))).toBe('symbol') // left to the database
  })
})
