import { waitingReason, type DeliveryRow } from '@hookledger/core'
import { waitingFacts } from '@hookledger/store'
import type { OpContext } from './operation.js'
import { deliveryView, type DeliveryView } from './schemas.js'

/** Delivery views with their `waiting_reason` (one ledger read and one endpoint read a page). */
export async function deliveryViews(ctx: OpContext, rows: readonly DeliveryRow[]): Promise<DeliveryView[]> {
  const facts = await waitingFacts(ctx.deps.db, ctx.principal.owner_id, rows)
  const now = ctx.deps.clock.now()
  return rows.map((d) =>
    deliveryView(
      d,
      ctx.deps.publicBaseUrl,
      waitingReason(d, facts.scheduledBy.get(d.id) ?? null, facts.endpoints.get(d.endpoint_id) ?? null, now, facts.blockedBy.get(d.id) ?? null),
    ),
  )
}
