import createClient, { type Client, type ClientOptions } from 'openapi-fetch'
import type { paths } from './api-types.js'

export type { paths, components, operations } from './api-types.js'

export interface HookledgerClientOptions {
  /** Where hookledger serves, e.g. `http://127.0.0.1:8787` (no `/api`: the paths carry it). */
  readonly baseUrl: string
  /** A bearer token (`hl_…`) with the scopes the calls need: `admin`, `publish` or `operator`. */
  readonly token: string
  /** Another fetch (tests hand in an in-process app's). */
  readonly fetch?: ClientOptions['fetch']
}

/**
 * A typed client over hookledger's HTTP API: every path, parameter, body and answer is typed
 * from the OpenAPI document (src/api-types.ts, generated — see scripts/generate.ts). Errors are
 * answered, not thrown: `{ data }` on 2xx, `{ error }` (the problem+json body) otherwise.
 *
 * ```ts
 * const hookledger = createHookledgerClient({ baseUrl: 'http://127.0.0.1:8787', token })
 * const { data, error } = await hookledger.POST('/api/admin/webhooks', { body: { url, event_types: ['booking.*'] } })
 * ```
 */
export function createHookledgerClient(options: HookledgerClientOptions): Client<paths> {
  return createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/$/, ''),
    headers: { authorization: `Bearer ${options.token}` },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  })
}
