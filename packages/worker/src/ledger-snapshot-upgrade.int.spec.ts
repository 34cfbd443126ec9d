import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { generateLedgerSigningKey, parseLedgerPublicKey, parseLedgerSigningKey } from '@hookledger/core'
import { MIGRATIONS_DIR, ledgerChainVerify, ledgerReplayVerify, ledgerSnapshotTake, migrateToLatest } from '@hookledger/store'
import { sealEverything, testDatabase } from '@hookledger/testkit'
import { syntheticLedgerHistory } from '@hookledger/testkit/synthetic-ledger-history'

const key = parseLedgerSigningKey(generateLedgerSigningKey().secret)
const publicKey = parseLedgerPublicKey(key.publicKey)

describe('migration 0018: snapshots and archives on a ledger that already has history', () => {
  it('migrates a ledger with history; checkpoints without a snapshot sign what they signed before, and the first snapshot folds it all', async () => {
    const t = await testDatabase({ empty: true, poolSize: 2 })
    const before = mkdtempSync(path.join(tmpdir(), 'hookledger-migrations-0017-'))
    try {
      for (const f of readdirSync(MIGRATIONS_DIR).filter((f) => f < '0018')) cpSync(MIGRATIONS_DIR + f, path.join(before, f))
      await migrateToLatest(t.db, before + '/')
      await syntheticLedgerHistory(t.db, { deliveries: 300, endpoints: 5 })
      const rows = (await sql<{ n: string }>`select count(*)::text as n from ledger`.execute(t.db)).rows[0]!.n
      await migrateToLatest(t.db)
      expect((await sql<{ n: string }>`select count(*)::text as n from ledger`.execute(t.db)).rows[0]!.n).toBe(rows)
      // Checkpoints without a snapshot member: their signed message is the 0017 one (the core
      // unit test pins its bytes), so checkpoints sealed before the upgrade verify as they were.
      await sealEverything(t.db, key, () => new Date(), { maxRows: 200 })
      const checkpoints = (await sql<{ n: string }>`select count(*)::text as n from ledger_checkpoints where snapshot is null`.execute(t.db)).rows[0]!.n
      const chain = await ledgerChainVerify(t.db, { publicKey })
      expect(chain.problems).toEqual([])
      expect(chain.checkpoints).toBe(Number(checkpoints))
      const taken = await ledgerSnapshotTake(t.db, { key, now: () => new Date() })
      expect(taken.snapshot).toMatchObject({ seq: 1, endpoints: 5, deliveries: 300 })
      const replay = await ledgerReplayVerify(t.db)
      expect(replay.differences).toEqual([])
      expect(replay.snapshot).toMatchObject({ seq: 1, digestMatches: true })
      expect((await ledgerChainVerify(t.db, { publicKey })).problems).toEqual([])
    } finally {
      rmSync(before, { recursive: true, force: true })
      await t.close()
    }
  })
})
