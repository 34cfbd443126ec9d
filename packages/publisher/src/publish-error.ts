import type { InputRefusal } from '@hookledger/core'

/**
 * An event refused before anything was written, carrying what `POST /api/events` answers for
 * the same event: the HTTP `status` it would get, the stable `code` and the `field` at fault.
 * The caller's transaction is left as it was: roll it back, or carry on without the event.
 */
export class PublishError extends Error {
  readonly status: InputRefusal['status']
  readonly code: string
  readonly field: string | undefined
  /** In `publishMany`, the position of the refused event in the array. */
  readonly index: number | undefined

  constructor(refusal: InputRefusal, index?: number) {
    super(index === undefined ? refusal.message : `events[${index}]: ${refusal.message}`)
    this.name = 'PublishError'
    this.status = refusal.status
    this.code = refusal.code
    this.field = refusal.field
    this.index = index
  }
}
