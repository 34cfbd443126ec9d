import { z } from 'zod'
import { describe, expect, it } from 'vitest'
import { inputIssueMessage } from './input-messages.js'

const first = (schema: z.ZodType, input: unknown) => {
  const r = schema.safeParse(input)
  if (r.success) throw new Error('expected a failure')
  return inputIssueMessage(r.error.issues[0]!)
}

describe('inputIssueMessage: zod defaults in our own words', () => {
  it.each<[string, z.ZodType, unknown, string]>([
    ['missing', z.object({ a: z.string() }), {}, 'is required'],
    ['wrong type', z.string(), 1, 'must be text'],
    ['a whole number', z.number().int(), 1.5, 'must be a whole number'],
    ['a boolean', z.boolean(), 'yes', 'must be true or false'],
    ['empty string', z.string().min(1), '', 'must not be empty'],
    ['short string', z.string().min(3), 'ab', 'must be at least 3 characters'],
    ['long string', z.string().max(2), 'abc', 'must be at most 2 characters'],
    ['empty list', z.array(z.string()).min(1), [], 'must have at least one item'],
    ['long list', z.array(z.string()).max(2), ['a', 'b', 'c'], 'must be at most 2 items'],
    ['number too big', z.number().max(10), 11, 'must be at most 10'],
    ['number too small, exclusive', z.number().gt(0), 0, 'must be more than 0'],
    ['not a uuid', z.uuid(), 'nope', 'must be a UUID'],
    ['not a url', z.url(), 'nope', 'must be a URL'],
    ['not a date-time', z.iso.datetime(), 'yesterday', 'must be an ISO 8601 date-time (2026-01-31T12:00:00Z)'],
    ['not an option', z.enum(['24h', '7d']), '1d', 'must be one of "24h", "7d"'],
    ['a message of our own is kept', z.string().min(1, 'URL must start with http:// or https://'), '', 'URL must start with http:// or https://'],
    ['a refine is kept', z.string().refine((v) => v === 'x', { message: 'must be x' }), 'y', 'must be x'],
  ])('%s', (_name, schema, input, message) => {
    expect(first(schema, input)).toBe(message)
  })
})
