import type { z } from 'zod'
import { invalidInputRefusal, unstorableProblem, zodProblem } from '@hookledger/core'

/** Deepest JSON nesting accepted anywhere in an input (defined in core, shared with the publisher). */
export { INPUT_MAX_DEPTH } from '@hookledger/core'
import { OpError } from './op-error.js'
import type { Operation } from './operation.js'

/**
 * Refuses a raw input holding a string PostgreSQL cannot store (NUL, lone surrogate) or nested
 * deeper than `INPUT_MAX_DEPTH`.
 * @throws OpError 400 `invalid_input` naming the field.
 */
export function assertStorable(raw: unknown): void {
  const problem = unstorableProblem(raw)
  if (problem) throw invalidInput(problem.field, problem.message)
}

/** An input problem as the OpError every projection renders: 400, `invalid_input`, the field. */
export function invalidInput(field: string | undefined, message: string): OpError {
  const r = invalidInputRefusal(field || undefined, message)
  return new OpError(r.code, r.message, r.field)
}

/** The zod issue turned into an OpError naming the field (an unknown key names that key). */
export function zodInputError(error: z.ZodError): OpError {
  const { field, message } = zodProblem(error)
  return invalidInput(field, message)
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
