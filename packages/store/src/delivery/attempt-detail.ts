import { sql } from 'kysely'
import type { ThinEvent } from '@hookledger/core'
import type { Db } from '../database/database.js'

/** What an attempt's `delivery.attempted` entry kept of the answer, by ledger position. */
export interface AttemptAnswerFacts {
  readonly response_excerpt?: string
  readonly response_headers?: Record<string, string>
  readonly response_truncated?: boolean
}

/**
 * What the attempt history needs beyond the `delivery_attempts` view to show each attempt's
 * request and response: the answer facts of each entry, the event (null once pruned, or when
 * it no longer matches what its ledger entry committed to), and the
 * endpoint's URL as each `endpoint.created` / `endpoint.updated` set it (the URL an attempt
 * went to is the last one set before it).
 */
export async function attemptDetailFacts(
  db: Db,
  owner_id: string,
  delivery: { id: string; endpoint_id: string; event_id: string },
): Promise<{
  answers: Map<string, AttemptAnswerFacts>
  event: ThinEvent | null
  urls: { position: string; url: string }[]
}> {
  const [answers, events, urls] = await Promise.all([
    sql<{ position: string; answer: AttemptAnswerFacts }>`
      select position, jsonb_build_object(
          'response_excerpt', payload -> 'response_excerpt',
          'response_headers', payload -> 'response_headers',
          'response_truncated', payload -> 'response_truncated') as answer
      from ledger where delivery_id = ${delivery.id}::uuid and owner_id = ${owner_id}
        and kind = 'delivery.attempted'
    `.execute(db),
    // The event only as its `event.published` entry commits to it (type, subject, the SHA-256 of
    // its data): a row edited behind the ledger shows no request body, as if pruned.
    sql<ThinEvent>`
      select e.id, e.type, e.subject, e.occurred_at, e.data from events e
      join ledger l on l.kind = 'event.published' and l.owner_id = e.owner_id and l.event_id = e.id
      where e.owner_id = ${owner_id} and e.id = ${delivery.event_id}
        and l.payload ->> 'type' = e.type and l.payload ->> 'subject' = e.subject
        and l.payload ->> 'data_sha256' = encode(sha256(convert_to(e.data::text, 'UTF8')), 'hex')
    `.execute(db),
    sql<{ position: string; url: string }>`
      select position, payload ->> 'url' as url from ledger
      where endpoint_id = ${delivery.endpoint_id}::uuid and owner_id = ${owner_id}
        and delivery_id is null
        and kind in ('endpoint.created', 'endpoint.updated') and payload ? 'url'
      order by position
    `.execute(db),
  ])
  return {
    answers: new Map(answers.rows.map((r) => [String(r.position), stripNulls(r.answer)])),
    event: events.rows[0] ?? null,
    urls: urls.rows.map((r) => ({ position: String(r.position), url: r.url })),
  }
}

function stripNulls(answer: AttemptAnswerFacts): AttemptAnswerFacts {
  return Object.fromEntries(Object.entries(answer).filter(([, v]) => v !== null)) as AttemptAnswerFacts
}

/** The URL in force at `position`: the last one set before it (positions compare as integers). */
export function urlAt(urls: readonly { position: string; url: string }[], position: string): string | null {
  let found: string | null = null
  for (const u of urls) if (BigInt(u.position) < BigInt(position)) found = u.url
  return found
}
