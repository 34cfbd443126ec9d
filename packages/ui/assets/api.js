// The one way the UI talks to the server: the public HTTP operations, with the bearer token
// the user pasted. Problems (application/problem+json) become ProblemError; nothing else of a
// failed response (an HTML error page, a stack) is ever shown.

const TOKEN_KEY = 'hookledger.token'

/** The pasted token, per browser tab: sessionStorage is cleared when the tab closes. */
export const session = {
  get token() {
    return sessionStorage.getItem(TOKEN_KEY)
  },
  set(token) {
    sessionStorage.setItem(TOKEN_KEY, token)
  },
  clear() {
    sessionStorage.removeItem(TOKEN_KEY)
  },
}

/** A refusal or failure, reduced to the problem fields the UI shows. */
export class ProblemError extends Error {
  constructor({ status, code, title, detail, field }) {
    super(detail ?? title)
    this.name = 'ProblemError'
    this.status = status
    this.code = code
    this.title = title
    this.detail = detail
    this.field = field
  }
}

let onUnauthorized = () => {}

/** What to do when the stored token is refused mid-session (the app sends the user to sign in). */
export function setUnauthorizedHandler(handler) {
  onUnauthorized = handler
}

const STATUS_TITLES = { 502: 'Bad Gateway', 503: 'Service Unavailable', 504: 'Gateway Timeout' }

function problemFrom(status, body) {
  if (body && typeof body === 'object' && typeof body.code === 'string') {
    const text = (v) => (typeof v === 'string' ? v : undefined)
    return {
      status,
      code: body.code,
      title: text(body.title) ?? 'Error',
      detail: text(body.detail),
      field: text(body.field),
    }
  }
  return {
    status,
    code: `http_${status}`,
    title: STATUS_TITLES[status] ?? 'Error',
    detail: `The server answered ${status} without an explanation.`,
  }
}

/**
 * Calls one operation. `query` is added to the URL, `body` sent as JSON. With `token` the call
 * uses that token and a 401 is left to the caller (sign-in); otherwise the session's token is
 * used and a 401 signs the user out.
 */
export async function api(method, path, { query, body, signal, token } = {}) {
  const url = new URL(path, location.origin)
  for (const [k, v] of Object.entries(query ?? {}))
    if (v !== undefined && v !== null && v !== '') url.searchParams.set(k, String(v))
  const headers = { accept: 'application/json, application/problem+json' }
  const bearer = token ?? session.token
  if (bearer) headers.authorization = `Bearer ${bearer}`
  if (body !== undefined) headers['content-type'] = 'application/json'
  let res
  try {
    res = await fetch(url, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
    })
  } catch (err) {
    if (signal?.aborted) throw err
    throw new ProblemError({
      status: 0,
      code: 'network_error',
      title: 'Network error',
      detail: 'Could not reach the server. Check that it is running and try again.',
    })
  }
  const isJson = /^application\/(.+\+)?json\b/i.test(res.headers.get('content-type') ?? '')
  const payload = res.status !== 204 && isJson ? await res.json().catch(() => null) : null
  if (res.ok) return payload
  const problem = new ProblemError(problemFrom(res.status, payload))
  if (res.status === 401 && token === undefined) onUnauthorized(problem)
  throw problem
}

/** `/api/admin/webhooks/<id>` with the id escaped. */
export const endpointPath = (id, suffix = '') =>
  `/api/admin/webhooks/${encodeURIComponent(id)}${suffix}`
