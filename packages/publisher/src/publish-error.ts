import type { InputRefusal } from '@hookledger/core'

/**
 * An event refused before anything was written, carrying what `POST /api/events` answers for
 * the same event: the stable `code` (which the HTTP path maps to its status) and the `field` at
 * fault. Branch on `code`: `invalid_input`, `unknown_event_type` (not declared: the message says
 * how to declare it), `reserved_event_type`, `payload_too_large`, `event_data_invalid` (`data`
 * breaks the type's schema; `pointer` says where), `event_type_deprecated` (past its sunset),
 * `event_id_conflict`, `owner_suspended` (an operator suspended the owner: nothing is written until
 * it is resumed), `owner_rate_limited` (over the owner's publish limit: `retryAt` says from when).
 * The caller's transaction is left as it was: roll it back, or carry on without the event.
 */
export class PublishError extends Error {
  readonly code: InputRefusal['code']
  readonly field: string | undefined
  /** `event_data_invalid`: where `data` breaks its type's schema, as a JSON pointer (`/data/order_id`). */
  readonly pointer: string | undefined
  /** In `publishMany`, the position of the refused event in the array. */
  readonly index: number | undefined
  /** `owner_rate_limited`: from when the owner may publish again. */
  readonly retryAt: Date | undefined

  constructor(refusal: InputRefusal, index?: number) {
    super(index === undefined ? refusal.message : `events[${index}]: ${refusal.message}`)
    this.name = 'PublishError'
    this.code = refusal.code
    this.field = refusal.field
    this.pointer = refusal.pointer
    this.index = index
    this.retryAt = refusal.retry_at === undefined ? undefined : new Date(refusal.retry_at)
  }
}
