import { sql } from 'kysely'
import type { AttemptOutcomeName, HealthAttempt } from '@hookledger/core'
import type { Db } from './database/database.js'

/**
 * The query of `endpointAttemptsSince`, for it and for the test that EXPLAINs it: one endpoint's
 * `delivery.attempted` entries recorded in [since, until], a range scan of
 * ledger_endpoint_attempts_idx (the baseline migration) on each ledger partition.
 */
export function endpointAttemptsQuery(owner_id: string, endpoint_id: string, since: Date, until: Date) {
  return sql<{ at: Date; outcome: AttemptOutcomeName; duration_ms: number }>`
    select occurred_at as at, payload ->> 'outcome' as outcome, (payload ->> 'duration_ms')::integer as duration_ms
    from ledger
    where endpoint_id = ${endpoint_id}::uuid and kind = 'delivery.attempted'
      and occurred_at >= ${since} and occurred_at <= ${until}
      and owner_id = ${owner_id}
  `
}

/** One endpoint's attempts recorded in [since, until], for the health math in core. */
export async function endpointAttemptsSince(
  db: Db,
  owner_id: string,
  endpoint_id: string,
  since: Date,
  until: Date,
): Promise<HealthAttempt[]> {
  return (await endpointAttemptsQuery(owner_id, endpoint_id, since, until).execute(db)).rows
}
