import type { Context } from 'hono'

/** An RFC 9457 problem document with our stable `code` and, for bad input, the field at fault. */
export interface Problem {
  readonly type: string
  readonly title: string
  readonly status: number
  readonly code: string
  readonly detail?: string
  readonly field?: string
  /** For input a JSON Schema checked (an event's `data`): where it fails, as a JSON pointer. */
  readonly pointer?: string
  /** A refusal that passes (429): from when to try again (also as `Retry-After`). */
  readonly retry_at?: string
}

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
}

/** Renders a problem as `application/problem+json`. */
export function problem(
  c: Context,
  status: number,
  code: string,
  detail?: string,
  field?: string,
  headers: Record<string, string> = {},
  pointer?: string,
  retryAt?: string,
): Response {
  const body: Problem = {
    type: `https://hookledger.dev/problems/${code}`,
    title: TITLES[status] ?? 'Error',
    status,
    code,
    ...(detail !== undefined ? { detail } : {}),
    ...(field !== undefined ? { field } : {}),
    ...(pointer !== undefined ? { pointer } : {}),
    ...(retryAt !== undefined ? { retry_at: retryAt } : {}),
  }
  return c.body(JSON.stringify(body), status as never, {
    'content-type': 'application/problem+json',
    ...headers,
  })
}
