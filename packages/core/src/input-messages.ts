/**
 * Validation messages in our own words. zod's defaults ("Invalid input: expected string,
 * received undefined", "Too small: expected string to have >=3 characters") are for developers;
 * an owner reading a form error or an API answer gets "is required", "must be at least 3
 * characters". A message a schema set itself (a refine, an explicit `.min(…, 'message')`) is
 * kept as written: only zod's defaults are rewritten.
 */
import type { z } from 'zod'

const ZOD_DEFAULT = /^(Invalid|Too (small|big)|Expected|Unrecognized)/

const KIND: Record<string, string> = {
  string: 'text',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
  object: 'an object',
  array: 'a list',
  date: 'a date',
  bigint: 'a whole number',
}

const FORMAT: Record<string, string> = {
  uuid: 'a UUID',
  url: 'a URL',
  email: 'an email address',
  datetime: 'an ISO 8601 date-time (2026-01-31T12:00:00Z)',
  date: 'an ISO 8601 date (2026-01-31)',
  regex: 'in the expected format',
}

const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`
const size = (origin: string | undefined, n: number) =>
  origin === 'string' ? plural(n, 'character') : origin === 'array' || origin === 'set' ? plural(n, 'item') : String(n)

/** The message for one zod issue, as the field's complement: "is required", "must be …". */
export function inputIssueMessage(issue: z.core.$ZodIssue): string {
  if (!ZOD_DEFAULT.test(issue.message)) return issue.message
  const i = issue as z.core.$ZodIssue & { expected?: string; origin?: string; minimum?: number | bigint; maximum?: number | bigint; inclusive?: boolean; format?: string; values?: unknown[] }
  switch (issue.code) {
    case 'invalid_type':
      if (/received undefined$/.test(issue.message)) return 'is required'
      return `must be ${KIND[i.expected ?? ''] ?? i.expected}`
    case 'too_small': {
      const n = Number(i.minimum)
      if (i.origin === 'string' && n === 1) return 'must not be empty'
      if (i.origin === 'array' && n === 1) return 'must have at least one item'
      return i.inclusive === false ? `must be more than ${size(i.origin, n)}` : `must be at least ${size(i.origin, n)}`
    }
    case 'too_big': {
      const n = Number(i.maximum)
      return i.inclusive === false ? `must be less than ${size(i.origin, n)}` : `must be at most ${size(i.origin, n)}`
    }
    case 'invalid_format':
      if (i.format === 'starts_with' || i.format === 'ends_with' || i.format === 'includes') return issue.message
      return `must be ${FORMAT[i.format ?? ''] ?? `a valid ${i.format}`}`
    case 'invalid_value':
      return i.values && i.values.length > 0 ? `must be one of ${i.values.map((v) => JSON.stringify(v)).join(', ')}` : 'is not an allowed value'
    case 'invalid_union':
      return 'is not in any of the accepted forms'
    default:
      return issue.message
  }
}
