import type { Db } from '@hookledger/store'

/**
 * The key id the ledger's newest checkpoint names (null: no checkpoint yet): the key a sealing
 * process must hold, or have been handed over to (ledger-keys.ts).
 */
export async function lastCheckpointKeyId(db: Db): Promise<string | null> {
  const row = await db.selectFrom('ledger_checkpoints').select('key_id').orderBy('seq', 'desc').limit(1).executeTakeFirst()
  return row?.key_id ?? null
}
