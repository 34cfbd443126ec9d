import { sql } from 'kysely'
import type { Db } from '@hookledger/store'
import { bypassLedgerGuards } from './ledger-guard-bypass.js'

/**
 * What someone holding a superuser's credential would do to hide the newest history: the
 * checkpoints past `atMost` rows (back to the largest checkpoint size at or below it), the rows
 * they sealed, their cosignatures, and the tree's tiles trimmed to that size, so the sealer can
 * sign a different tree on top. The size it fell back to.
 */
export async function rollLedgerBack(db: Db, atMost: number): Promise<number> {
  const keep = Number((await sql<{ total: string }>`select max(total)::text as total from ledger_checkpoints where total <= ${atMost}`.execute(db)).rows[0]!.total)
  // Hashes a level-L tile keeps for a tree of `keep` rows: floor(keep / 256^L) − 256·index (entries: level 0's).
  const kept = sql`(${keep}::bigint / (256::bigint ^ greatest(t.level, 0))::bigint) - 256 * t.index`
  await bypassLedgerGuards(db, async (trx) => {
    await sql`delete from ledger where position in (select unnest(leaf_positions) from ledger_checkpoints where total > ${keep})`.execute(trx)
    await sql`delete from ledger_checkpoints where total > ${keep}`.execute(trx)
    await sql`delete from ledger_cosignatures where tree_size > ${keep}`.execute(trx)
    await sql`delete from ledger_tree_tiles t where ${kept} <= 0`.execute(trx)
    await sql`update ledger_tree_tiles t set hashes = substring(t.hashes from 1 for 32 * least(256, ${kept})::int)`.execute(trx)
  })
  return keep
}
