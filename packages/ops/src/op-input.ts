import type { z } from 'zod'
import { OpError } from './op-error.js'
import type { Operation } from './operation.js'

/** Deepest JSON nesting accepted anywhere in an input (thin event data is shallow). */
export const INPUT_MAX_DEPTH = 32

// NUL cannot be stored in a PostgreSQL text or jsonb value, and a lone surrogate cannot be
// encoded as UTF-8; both are refused here, naming the field, instead of failing in the database.
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** The first problem with a raw (parsed JSON or query) input that no schema should have to see. */
function unstorable(value: unknown): { field: string; message: string } | null {
  const stack: { value: unknown; path: string[] }[] = [{ value, path: [] }]
  while (stack.length > 0) {
    const { value: v, path } = stack.pop()!
    if (typeof v === 'string') {
      if (UNSTORABLE.test(v))
        return { field: path.join('.'), message: 'contains a NUL character or invalid UTF-16' }
    } else if (v !== null && typeof v === 'object') {
      if (path.length >= INPUT_MAX_DEPTH)
        return { field: path.join('.'), message: `is nested deeper than ${INPUT_MAX_DEPTH} levels` }
      for (const [key, child] of Object.entries(v)) {
        if (UNSTORABLE.test(key))
          return {
            field: path.join('.'),
            message: 'has a key with a NUL character or invalid UTF-16',
          }
        stack.push({ value: child, path: [...path, key] })
      }
    }
  }
  return null
}

/**
 * Refuses a raw input holding a string PostgreSQL cannot store (NUL, lone surrogate) or nested
 * deeper than `INPUT_MAX_DEPTH`.
 * @throws OpError 400 `invalid_input` naming the field.
 */
export function assertStorable(raw: unknown): void {
  const problem = unstorable(raw)
  if (problem) throw invalidInput(problem.field, problem.message)
}

/** An input problem as the OpError every projection renders: 400, `invalid_input`, the field. */
export function invalidInput(field: string | undefined, message: string): OpError {
  return new OpError(
    400,
    'invalid_input',
    field ? `${field}: ${message}` : message,
    field || undefined,
  )
}

/** The zod issue turned into an OpError naming the field (an unknown key names that key). */
export function zodInputError(error: z.ZodError): OpError {
  const issue = error.issues[0]!
  const path = issue.path.map(String)
  if (issue.code === 'unrecognized_keys') {
    return invalidInput([...path, issue.keys[0] ?? ''].join('.'), 'is not a known field')
  }
  return invalidInput(path.join('.'), issue.message)
}

/**
 * Validates the raw input of `op` exactly as every projection (HTTP, CLI) must: unstorable
 * strings and over-deep nesting first, then the op's zod schema.
 * @throws OpError 400 `invalid_input` naming the field.
 */
export function parseOpInput<I extends z.ZodType>(op: Operation<I>, raw: unknown): z.output<I> {
  assertStorable(raw)
  const parsed = op.input.safeParse(raw)
  if (!parsed.success) throw zodInputError(parsed.error)
  return parsed.data
}
