import type { Operation } from './operation.js'
import { ledgerCheckpointOp, ledgerExportOp, ledgerPublicKeyOp, ledgerSnapshotOp, ledgerVerifyOp, webhooksReceipt } from './ledger-chain-ops.js'
import { eventsExplain } from './event-explain-ops.js'
import { webhooksStats } from './endpoint-health-ops.js'
import { webhooksRecover } from './endpoint-recover-ops.js'
import { deliveriesList, deliveriesRedeliver } from './delivery-ops.js'
import { ledgerAuditOp, ledgerReadOp, ledgerReplayOp } from './operator-ops.js'
import { ownersGet, ownersList, ownersResume, ownersSetLimits, ownersSuspend } from './owners/owner-ops.js'
import {
  accessCodesGet,
  accessCodesPut,
  accessCodesRevoke,
  embedsDelete,
  embedsGet,
  embedsPut,
} from './scope-ops.js'
import { eventsPublish, webhooksEventTypes } from './event-ops.js'
import { eventTypesDeclare, eventTypesDeprecate, eventTypesList, eventTypesUpdate } from './event-type-ops.js'
import {
  webhooksAttempts,
  webhooksCreate,
  webhooksDelete,
  webhooksDeliveries,
  webhooksGet,
  webhooksList,
  webhooksRedeliver,
  webhooksRotateSecret,
  webhooksSendTest,
  webhooksUpdate,
} from './webhook-ops.js'

/**
 * Every operation, declared once. HTTP routes, `hookledger op <name>`, the MCP tools and the OpenAPI
 * description are derived from this list; adding an op is one declaration plus its handler.
 * Routes with a literal segment come before a `:param` at the same place (the HTTP adapter
 * also sorts them so, whatever the order here).
 */
export const OPERATIONS: readonly Operation[] = [
  webhooksList,
  webhooksCreate,
  webhooksEventTypes,
  webhooksGet,
  webhooksUpdate,
  webhooksDelete,
  webhooksRotateSecret,
  webhooksSendTest,
  webhooksDeliveries,
  webhooksStats,
  webhooksRedeliver,
  webhooksRecover,
  deliveriesList,
  deliveriesRedeliver,
  webhooksAttempts,
  webhooksReceipt,
  eventsPublish,
  eventsExplain,
  embedsPut,
  embedsGet,
  embedsDelete,
  accessCodesPut,
  accessCodesGet,
  accessCodesRevoke,
  eventTypesList,
  eventTypesDeclare,
  eventTypesUpdate,
  eventTypesDeprecate,
  ledgerReadOp,
  ledgerAuditOp,
  ledgerReplayOp,
  ledgerCheckpointOp,
  ledgerPublicKeyOp,
  ledgerVerifyOp,
  ledgerSnapshotOp,
  ledgerExportOp,
  ownersList,
  ownersGet,
  ownersSetLimits,
  ownersSuspend,
  ownersResume,
] as unknown as readonly Operation[]

export function findOperation(name: string): Operation | undefined {
  return OPERATIONS.find((o) => o.name === name)
}
