import { sql } from 'kysely'
import type { Db } from '@hookledger/store'

/**
 * The key id the ledger's newest checkpoint names (null: no checkpoint yet): the key a sealing
 * process must hold, or have been handed over to (ledger-keys.ts).
 */
export async function lastCheckpointKeyId(db: Db): Promise<string | null> {
  const { rows } = await sql<{ key_id: string }>`select key_id from ledger_checkpoints order by seq desc limit 1`.execute(db)
  return rows[0]?.key_id ?? null
}
