import type { Operation } from './operation.js'
import {
  eventsPublish,
  webhooksAttempts,
  webhooksCreate,
  webhooksDeliveries,
  webhooksGet,
  webhooksList,
} from './webhook-ops.js'

/**
 * Every operation, declared once. HTTP routes, `hookledger op <name>` and the OpenAPI
 * description are derived from this list; adding an op is one declaration plus its handler.
 * Routes with a literal segment come before a `:param` at the same place.
 */
export const OPERATIONS: readonly Operation[] = [
  webhooksList,
  webhooksCreate,
  webhooksGet,
  webhooksDeliveries,
  webhooksAttempts,
  eventsPublish,
] as unknown as readonly Operation[]

export function findOperation(name: string): Operation | undefined {
  return OPERATIONS.find((o) => o.name === name)
}
