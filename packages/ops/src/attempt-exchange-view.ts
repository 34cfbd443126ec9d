import { attemptExchange, type AttemptRow, type DeliveryRow, type EndpointRow } from '@hookledger/core'
import { attemptDetailFacts, urlAt, type Db } from '@hookledger/store'
import type { OpDeps } from './operation.js'

/**
 * Each attempt's request and response, in the order of `attempts`. The endpoint's secrets are
 * opened only to recompute the signatures it sent (which the receiver saw); they never leave.
 */
export async function attemptExchanges(
  deps: Pick<OpDeps, 'secretBox'> & { db: Db },
  owner_id: string,
  endpoint: EndpointRow,
  delivery: Pick<DeliveryRow, 'id' | 'endpoint_id' | 'event_id'>,
  attempts: readonly AttemptRow[],
) {
  const facts = await attemptDetailFacts(deps.db, owner_id, delivery)
  const secrets = new Map<string, string>([[endpoint.secret_key_id, deps.secretBox.open(endpoint.secret_sealed)]])
  if (endpoint.prev_secret_sealed !== null && endpoint.prev_secret_key_id !== null) {
    secrets.set(endpoint.prev_secret_key_id, deps.secretBox.open(endpoint.prev_secret_sealed))
  }
  return attempts.map((a) => {
    const answer = facts.answers.get(String(a.ledger_position)) ?? {}
    return attemptExchange({
      event_id: delivery.event_id,
      event: facts.event,
      url: urlAt(facts.urls, String(a.ledger_position)) ?? endpoint.url,
      started_at: a.started_at,
      signed_with: a.signed_with,
      secrets,
      status_code: a.status_code,
      response_excerpt: answer.response_excerpt,
      response_headers: answer.response_headers,
      response_truncated: answer.response_truncated,
    })
  })
}
