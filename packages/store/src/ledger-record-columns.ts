import type { LedgerRecord } from '@hookledger/core'

/**
 * The ledger's columns a `LedgerRecord` has (all but `tx_id`). Rows read with them are cast to
 * it: an entry's kind names its payload's shape, which the table's type cannot say.
 */
export const LEDGER_RECORD_COLUMNS = [
  'position', 'occurred_at', 'owner_id', 'kind', 'endpoint_id', 'delivery_id', 'event_id', 'payload', 'actor',
] as const satisfies readonly (keyof LedgerRecord)[]
