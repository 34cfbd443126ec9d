/**
 * A start-up failure the operator can fix: printed as one line (no stack trace) and the
 * process exits 1. `cause` keeps the original error for debug logs.
 */
export class StartupError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'StartupError'
  }
}

/** One line for an error thrown while starting: the StartupError's text, else `code: message`. */
export function startupErrorLine(err: unknown): string {
  if (err instanceof StartupError) return err.message
  if (err instanceof Error) {
    const code = (err as NodeJS.ErrnoException).code
    const first = err.message.split('\n')[0] ?? ''
    return code && !first.includes(code) ? `${code}: ${first}` : first
  }
  return String(err)
}
