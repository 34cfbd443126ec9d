/**
 * Owners as first-class objects (issue 24 item 2): an owner's limits and suspension, decided
 * here and ledgered as `owner.limits_set`, `owner.suspended` and `owner.resumed` (migration
 * 0009 applies them to `owners`). An owner without a row has the defaults: weight 1, no limits,
 * not suspended.
 */
import { z } from 'zod'
import type { InputRefusal } from '../events/event-rules.js'

/** The limits an operator sets; null: none (weight: the default 1). */
export interface OwnerLimits {
  readonly publish_per_second: number | null
  readonly publish_burst: number | null
  readonly max_endpoints: number | null
  readonly max_in_flight: number | null
  readonly weight: number
}

/** Any subset of the limits; an omitted one keeps its value, null clears it. */
export type OwnerLimitsPatch = { -readonly [K in keyof OwnerLimits]?: OwnerLimits[K] | null }

/** An owner as stored (or the defaults, for an owner without a row). */
export interface OwnerRow extends OwnerLimits {
  readonly id: string
  readonly suspended_at: Date | null
  readonly suspended_reason: string | null
  readonly created_at: Date | null
  readonly updated_at: Date | null
}

export const OWNER_LIMIT_NAMES = ['publish_per_second', 'publish_burst', 'max_endpoints', 'max_in_flight', 'weight'] as const

/** The bounds the owners table checks too (migration 0009). */
export const ownerLimitsPatchSchema = z
  .object({
    publish_per_second: z.number().positive().max(1_000_000).nullable().optional(),
    publish_burst: z.number().int().min(1).max(1_000_000).nullable().optional(),
    max_endpoints: z.number().int().min(0).max(1_000_000_000).nullable().optional(),
    max_in_flight: z.number().int().min(1).max(1_000_000).nullable().optional(),
    weight: z.number().int().min(1).max(1000).nullable().optional(),
  })
  .strict()

/** What an owner without a row is. */
export function ownerDefaults(id: string): OwnerRow {
  return { id, weight: 1, publish_per_second: null, publish_burst: null, max_endpoints: null, max_in_flight: null, suspended_at: null, suspended_reason: null, created_at: null, updated_at: null }
}

/** The owner after `patch` (omitted keep, null clears; weight cleared is 1). */
export function ownerWithLimits(row: OwnerRow, patch: OwnerLimitsPatch): OwnerRow {
  const next: Record<string, unknown> = { ...row }
  for (const name of OWNER_LIMIT_NAMES) {
    if (!(name in patch) || patch[name] === undefined) continue
    next[name] = patch[name] === null && name === 'weight' ? 1 : patch[name]
  }
  return next as unknown as OwnerRow
}

/**
 * The part of `patch` that changes `row`: what `owner.limits_set` records. Empty: nothing to
 * write (setting a limit to its value is not a change).
 */
export function ownerLimitsChange(row: OwnerRow, patch: OwnerLimitsPatch): OwnerLimitsPatch {
  const after = ownerWithLimits(row, patch)
  const change: OwnerLimitsPatch = {}
  for (const name of OWNER_LIMIT_NAMES) {
    if (name in patch && patch[name] !== undefined && after[name] !== row[name]) (change as Record<string, unknown>)[name] = patch[name]
  }
  return change
}

/** Suspend: the entry to append, or none when the owner is already suspended. */
export function ownerSuspendDecision(row: OwnerRow, reason: string): { reason: string } | null {
  return row.suspended_at === null ? { reason } : null
}

/** Resume: whether there is anything to resume. */
export function ownerResumeDecision(row: OwnerRow): boolean {
  return row.suspended_at !== null
}

/** hookledger_publish's refusal object (migration 0009), as the database answers it. */
export type OwnerPublishRefusalAnswer =
  | { readonly refused: 'owner_suspended'; readonly suspended_at: string; readonly reason: string | null }
  | { readonly refused: 'owner_rate_limited'; readonly retry_at: string; readonly publish_per_second: number; readonly publish_burst: number }

/** The refusal every way in renders (403 `owner_suspended`, 429 `owner_rate_limited`). */
export function ownerPublishRefusal(ownerId: string, answer: OwnerPublishRefusalAnswer): InputRefusal {
  if (answer.refused === 'owner_suspended') {
    return {
      code: 'owner_suspended',
      message: `owner ${ownerId} is suspended since ${new Date(answer.suspended_at).toISOString()}${answer.reason ? ` (${answer.reason})` : ''}: publishes are refused until an operator resumes it`,
    }
  }
  const retryAt = new Date(answer.retry_at).toISOString()
  return {
    code: 'owner_rate_limited',
    message: `owner ${ownerId} is over its publish limit (${answer.publish_per_second}/s, burst ${answer.publish_burst}): publish again from ${retryAt}`,
    retry_at: retryAt,
  }
}

/**
 * An API process answers an owner's publishes from a rate-limit refusal it just had, without
 * asking the database again, until this time: the refusal's `retry_at` (the bucket cannot admit
 * before it), but never more than `maxMs` ahead, so an operator's raised limit (or a suspension)
 * is seen within `maxMs`. Null: not remembered (already due).
 */
export function refusalRememberedUntil(retryAt: string, now: Date, maxMs: number): Date | null {
  const until = Math.min(Date.parse(retryAt), now.getTime() + maxMs)
  return until > now.getTime() ? new Date(until) : null
}

/** Whole seconds until `retryAt` (Retry-After), at least 1. */
export function retryAfterSeconds(retryAt: string, now: Date): number {
  return Math.max(1, Math.ceil((Date.parse(retryAt) - now.getTime()) / 1000))
}

/** Creating one more endpoint: refused when the owner already has `max_endpoints`. */
export function endpointQuotaRefusal(ownerId: string, maxEndpoints: number | null, existing: number): string | null {
  if (maxEndpoints === null || existing < maxEndpoints) return null
  return `owner ${ownerId} has ${existing} endpoints, its limit (max_endpoints ${maxEndpoints}): delete one, or ask an operator to raise the limit`
}
