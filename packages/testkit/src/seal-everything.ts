import { sql } from 'kysely'
import { type LedgerSigningKey, ledgerSeal } from '@hookledger/ledger'
import { type Db } from '@hookledger/store'

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
    // Rows an archive dropped are sealed but gone: count what is left past the last checkpoint.
    const { unsealed, total } = (
      await sql<{ unsealed: string; total: string | null }>`
        select (select count(*) from ledger l where c.last_tx_id is null or (l.tx_id, l.position) > (c.last_tx_id, c.last_position))::text as unsealed,
               c.total::text as total
        from (select null) _ left join lateral (select last_tx_id, last_position, total from ledger_checkpoints order by seq desc limit 1) c on true
      `.execute(db)
    ).rows[0]!
    if (unsealed === '0') return { checkpoints }
    if (Date.now() > deadline) throw new Error(`${unsealed} ledger rows still unsealed after 30 s (${total ?? 0} sealed)`)
    await new Promise((r) => setTimeout(r, 25))
  }
}
