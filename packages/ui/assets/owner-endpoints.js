// @ts-check
// What the delivery log needs to name things it did not load itself: the owner's endpoints by
// id (its endpoint column and filter) and the catalog's event types (its type filter).
import { api } from './api.js'

const PAGE_SIZE = 200
/** 2,000 endpoints: past that, a row names its endpoint by id and the filter lists the first ones. */
const MAX_PAGES = 10

/**
 * The owner's endpoints by id, oldest first.
 * @param {AbortSignal} signal
 * @returns {Promise<Map<string, any>>}
 */
export async function ownerEndpoints(signal) {
  const byId = new Map()
  /** @type {string | undefined} */
  let cursor
  for (let i = 0; i < MAX_PAGES; i++) {
    const page = await api('GET', '/api/admin/webhooks', { query: { limit: PAGE_SIZE, cursor }, signal })
    for (const e of page.data) byId.set(e.id, e)
    cursor = page.next_cursor ?? undefined
    if (!cursor) break
  }
  return byId
}

/**
 * The webhook-visible event types of the catalog (`{ type, group, description }`).
 * @param {AbortSignal} signal
 * @returns {Promise<{ type: string, group: string, description: string }[]>}
 */
export async function catalogEventTypes(signal) {
  return (await api('GET', '/api/admin/webhooks/event_types', { signal })).data
}

/**
 * Both at once; what failed is null, with its problem, and the page goes on without it.
 * @param {AbortSignal} signal
 */
export async function logLookups(signal) {
  const [endpoints, types] = await Promise.allSettled([ownerEndpoints(signal), catalogEventTypes(signal)])
  return {
    endpoints: endpoints.status === 'fulfilled' ? endpoints.value : null,
    types: types.status === 'fulfilled' ? types.value : null,
    problem: endpoints.status === 'rejected' ? endpoints.reason : types.status === 'rejected' ? types.reason : null,
  }
}
