import { sql } from 'kysely'
import type { LedgerSigningKey } from '@hookledger/core'
import { ledgerSeal, type Db } from '@hookledger/store'

/**
 * Seals until every ledger row is sealed. The sealer only takes rows below the oldest running
 * transaction of the whole cluster, and other test files share the cluster: their open
 * transactions can hold the horizon back for a moment, so one seal may not reach the end.
 */
export async function sealEverything(db: Db, key: LedgerSigningKey, now: () => Date, options: { maxRows?: number } = {}) {
  const deadline = Date.now() + 30_000
  let checkpoints = 0
  for (;;) {
    const sealed = await ledgerSeal(db, { key, now: now(), ...options })
    checkpoints += sealed.checkpoints.length
    const { rows, total } = (
      await sql<{ rows: string; total: string | null }>`
        select (select count(*) from ledger)::text as rows,
               (select total::text from ledger_checkpoints order by ledger_checkpoints.seq desc limit 1) as total
      `.execute(db)
    ).rows[0]!
    if (rows === (total ?? '0')) return { checkpoints }
    if (Date.now() > deadline) throw new Error(`sealed ${total ?? 0} of ${rows} ledger rows in 30 s`)
    await new Promise((r) => setTimeout(r, 25))
  }
}
