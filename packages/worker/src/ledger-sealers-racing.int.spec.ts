import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateLedgerSigningKey, ledgerChainVerify, ledgerSeal, parseLedgerPublicKey, parseLedgerSigningKey } from '@hookledger/ledger'
import { engineHarness, sealEverything, type EngineHarness } from '@hookledger/testkit'

const key = parseLedgerSigningKey(generateLedgerSigningKey().secret)

/**
 * A seal reads, hashes with no connection held, then appends: sealers in several processes race
 * between the read and the append. Whoever appends second finds the checkpoint it read no longer
 * the newest and seals nothing; the chain stays one line, every row sealed exactly once.
 */
describe('sealers racing', () => {
  let h: EngineHarness
  beforeAll(async () => {
    h = await engineHarness()
    await h.createEndpoint()
    for (let i = 0; i < 12; i++) await h.publish({ id: `evt_race_${i}` })
    await h.step()
  })
  afterAll(() => h.close())

  it('four seals at once leave one unbroken chain that seals every row once', async () => {
    for (let round = 0; round < 3; round++) {
      const results = await Promise.all(
        Array.from({ length: 4 }, () => ledgerSeal(h.db, { key, now: h.clock.now(), maxRows: 5 })),
      )
      const seqs = results.flatMap((r) => r.checkpoints.map((c) => c.seq))
      expect(new Set(seqs).size, 'no checkpoint signed twice').toBe(seqs.length)
      await h.publish({ id: `evt_race_more_${round}` })
    }
    await sealEverything(h.db, key, () => h.clock.now())
    const totals = (
      await sql<{ rows: string; sealed: string; checkpoints: string; max_seq: string }>`
        select (select count(*) from ledger)::text as rows,
               (select total from ledger_checkpoints order by seq desc limit 1)::text as sealed,
               (select count(*) from ledger_checkpoints)::text as checkpoints,
               (select max(seq) from ledger_checkpoints)::text as max_seq
      `.execute(h.db)
    ).rows[0]!
    expect(totals.sealed).toBe(totals.rows)
    expect(totals.checkpoints).toBe(totals.max_seq)
    const report = await ledgerChainVerify(h.db, { publicKey: parseLedgerPublicKey(key.publicKey) })
    expect(report.problems).toEqual([])
    expect(report.ok).toBe(true)
  })
})
