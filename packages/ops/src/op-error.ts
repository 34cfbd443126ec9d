/**
 * The one error type operations throw for an expected refusal. The HTTP adapter renders it as
 * `application/problem+json`; the CLI prints it. `code` is stable and is not the HTTP status.
 */
export class OpError extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 405 | 409 | 413 | 415 | 422 | 429,
    readonly code: string,
    message: string,
    /** The input field at fault, as a dotted path (`event_types.2`). */
    readonly field?: string,
  ) {
    super(message)
    this.name = 'OpError'
  }
}

export const notFound = (what: string) => new OpError(404, 'not_found', `${what} not found`)
