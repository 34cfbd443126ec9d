import { describe, expect, it } from 'vitest'
import { DEFAULT_DB_SCHEMA, deliveriesChannel, eventsChannel } from './database-contract.js'

describe("an install's NOTIFY channels", () => {
  it.each([
    [DEFAULT_DB_SCHEMA, 'hookledger_events', 'hookledger_deliveries'],
    ['acme_hooks', 'hookledger_events.acme_hooks', 'hookledger_deliveries.acme_hooks'],
  ])('schema %s: %s and %s', (schema, events, deliveries) => {
    expect(eventsChannel(schema)).toBe(events)
    expect(deliveriesChannel(schema)).toBe(deliveries)
  })

  it('refuse a schema name that could not be one', () => {
    expect(() => eventsChannel('bad name"')).toThrow('must match')
  })
})
