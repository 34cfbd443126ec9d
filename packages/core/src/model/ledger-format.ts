/**
 * What a ledger format leaves out of an entry, and how a reader fills it back in. The fold, the
 * attempt history and the replay's history checks read these fields through here; the
 * `delivery_attempts` view (migration 0023) fills them the same way in SQL. So a ledger of every
 * format replays, verifies and reads as one (docs/ledger.md, "Ledger format 5").
 */
import type { LedgerEntryOf, LedgerPayloads } from './ledger-entry.js'

/** An attempt's payload with every field present, whichever format wrote it. */
export type AttemptPayload = LedgerPayloads['delivery.attempted'] & { counted: boolean; run: number; error: string | null }

/** Format 5 writes an attempt without `counted: true`, `run: 1` and `error: null`; formats 1–4 with them. */
export function attemptPayloadOf(p: LedgerPayloads['delivery.attempted']): AttemptPayload {
  return { ...p, counted: p.counted ?? true, run: p.run ?? 1, error: p.error ?? null }
}

/** The payload format 5 writes: the usual values left out (`attemptPayloadOf` restores them). */
export function attemptPayloadWritten(p: AttemptPayload): LedgerPayloads['delivery.attempted'] {
  const { counted, run, error, ...rest } = p
  return { ...rest, ...(counted ? {} : { counted }), ...(run === 1 ? {} : { run }), ...(error === null ? {} : { error }) }
}

/** When a claim's lease ends: `lease_until` (formats 1–4), or `occurred_at` + `lease_ms` (format 5). */
export function claimLeaseUntil(e: Pick<LedgerEntryOf<'delivery.claimed'>, 'occurred_at' | 'payload'>): Date {
  const p = e.payload
  if (p.lease_until !== undefined) return new Date(p.lease_until)
  return new Date(e.occurred_at.getTime() + (p.lease_ms ?? Number.NaN))
}
