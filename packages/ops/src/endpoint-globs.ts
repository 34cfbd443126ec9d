/**
 * What an endpoint may subscribe to, against the catalog as it stands (built-ins and the
 * installation's declared types, read from the database): each new glob must match some
 * webhook-visible type that is not deprecated, and may not name a deprecated type outright.
 * Globs an endpoint already has stay as they are (a deprecated type keeps its subscribers).
 */
import { endpointGet, eventCatalogRead } from '@hookledger/store'
import { OpError } from './op-error.js'
import type { OpContext } from './operation.js'

/** @throws OpError `event_type_deprecated` or `glob_matches_nothing`, naming `event_types.<i>`. */
export async function endpointGlobsCheck(ctx: OpContext, globs: readonly string[] | undefined, endpointId?: string): Promise<void> {
  if (globs === undefined) return
  const kept = new Set(endpointId === undefined ? [] : ((await endpointGet(ctx.deps.db, ctx.principal.owner_id, endpointId))?.event_types ?? []))
  const fresh = globs.map((glob, i) => ({ glob, i })).filter(({ glob }) => !kept.has(glob))
  if (fresh.length === 0) return
  const catalog = await eventCatalogRead(ctx.deps.db, ctx.deps.catalog)
  for (const { glob, i } of fresh) {
    const deprecated = catalog.get(glob)?.deprecated
    if (deprecated) {
      throw new OpError('event_type_deprecated', `"${glob}" is deprecated since ${deprecated.at}${deprecated.reason ? ` (${deprecated.reason})` : ''}: no new subscriptions`, `event_types.${i}`)
    }
    if (!catalog.globMatchesSomeWebhookType(glob)) {
      throw new OpError('glob_matches_nothing', `"${glob}" matches no webhook-visible event type (deprecated ones take no new subscriptions)`, `event_types.${i}`)
    }
  }
}
