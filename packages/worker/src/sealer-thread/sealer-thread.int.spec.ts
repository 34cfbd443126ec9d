import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateLedgerSigningKey, ledgerChainVerify, parseLedgerPublicKey, parseLedgerSigningKey, type LedgerCheckpoint } from '@hookledger/ledger'
import { DEFAULT_DB_SCHEMA } from '@hookledger/store'
import { engineHarness, type EngineHarness } from '@hookledger/testkit'
import { startSealerThread } from './sealer-thread.js'

const key = parseLedgerSigningKey(generateLedgerSigningKey().secret)

/** The sealer's own thread, connected as the service role, sealing at the time it is handed. */
describe('the sealer thread', () => {
  let h: EngineHarness
  beforeAll(async () => {
    h = await engineHarness()
    await h.createEndpoint()
    for (let i = 0; i < 5; i++) await h.publish({ id: `evt_thread_${i}` })
    await h.step()
  })
  afterAll(() => h.close())

  it('seals every row as the service role, signs at the clock it was handed, and reports each checkpoint', async () => {
    const thread = startSealerThread({ url: h.roleUrl('service'), schema: DEFAULT_DB_SCHEMA, key })
    try {
      h.clock.advance(86_400_000)
      const told: LedgerCheckpoint[] = []
      const sealed = await thread.seal({ now: h.clock.now(), onCheckpoint: (c) => told.push(c) })
      const rows = (await sql<{ n: string }>`select count(*)::text as n from ledger`.execute(h.db)).rows[0]!.n
      expect(sealed.rows).toBe(Number(rows))
      expect(told.map((c) => c.seq)).toEqual(sealed.checkpoints.map((c) => c.seq))
      expect(sealed.checkpoints.at(-1)?.created_at).toBe(h.clock.now().toISOString())
      // Nothing new: no checkpoint, unless forced.
      expect((await thread.seal({ now: h.clock.now() })).checkpoints).toEqual([])
      expect((await thread.seal({ now: h.clock.now(), force: true })).checkpoints).toHaveLength(1)
      const report = await ledgerChainVerify(h.db, { publicKey: parseLedgerPublicKey(key.publicKey) })
      expect(report.problems).toEqual([])
    } finally {
      await thread.close()
    }
    await expect(thread.seal({ now: h.clock.now() })).rejects.toThrow(/sealer thread ended/)
  })

  it('a thread that ended unasked is replaced by the next seal', async () => {
    const thread = startSealerThread({ url: h.roleUrl('service'), schema: DEFAULT_DB_SCHEMA, key })
    try {
      await thread.seal({ now: h.clock.now() })
      await thread.terminate()
      await h.publish({ id: 'evt_thread_after_crash' })
      h.clock.advance(1_000)
      const sealed = await thread.seal({ now: h.clock.now() })
      expect(sealed.rows).toBeGreaterThan(0)
      expect(sealed.checkpoints.at(-1)?.created_at).toBe(h.clock.now().toISOString())
    } finally {
      await thread.close()
    }
  })

  it('hands a database failure back with its code, and keeps sealing after it', async () => {
    const wrong = new URL(h.roleUrl('service'))
    wrong.password = 'not-the-password'
    const thread = startSealerThread({ url: wrong.toString(), schema: DEFAULT_DB_SCHEMA, key })
    try {
      await expect(thread.seal({ now: h.clock.now() })).rejects.toMatchObject({ code: '28P01' })
      await expect(thread.seal({ now: h.clock.now() })).rejects.toMatchObject({ code: '28P01' })
    } finally {
      await thread.close()
    }
  })
})
