import { DeliveryOutcome } from '@hookledger/core'
import type { ClaimedDelivery, Settlement } from '@hookledger/store'

/** A claimed delivery answered 2xx at `at`, as a worker hands it to the settle (on the rows its claim left). */
export function completedSettlement(c: ClaimedDelivery, at: Date, actor = 'worker:w'): Settlement {
  return {
    delivery: c.delivery,
    endpoint: c.endpoint,
    actor,
    outcome: DeliveryOutcome.completed({ started_at: at, duration_ms: 5, status_code: 200, error: null, signed_with: [] }),
  }
}
