import { sql } from 'kysely'
import { afterAll, describe, expect, it } from 'vitest'
import { bypassLedgerGuards, engineHarness, forgeDeliveries, type EngineHarness } from '@hookledger/testkit'
import { runCli } from './cli-process.js'

let h: EngineHarness | null = null
afterAll(async () => {
  await h?.close()
})

describe('ledger replay --verify: what it prints', () => {
  it('names a cut history, lists 1,000 differences and says how many more there are', async () => {
    h = await engineHarness()
    h.receiver.enqueue({ status: 500 }, { status: 500 })
    await h.createEndpoint()
    await h.publish({ id: 'evt_1' })
    await h.step()
    h.clock.advance(5_000)
    await h.step()
    h.clock.advance(300_000)
    await h.step()
    const d = await h.deliveryOf('evt_1')
    expect(d).toMatchObject({ state: 'completed', attempts: 3 })
    const ledger = await h.ledgerOf('delivery_id', d.id)
    // attempt 2 and its retry cut out; 1,005 rows no ledger entry made, all after it in id order
    await bypassLedgerGuards(h.db, async (trx) => {
      await sql`delete from ledger where position in (${ledger[5]!.position}, ${ledger[6]!.position})`.execute(trx)
      await forgeDeliveries(trx, sql`
        select ('ffffffff-ffff-4fff-8fff-' || lpad(to_hex(i), 12, '0'))::uuid, owner_id, endpoint_id, 'evt_forged_' || i,
          event_type, state, run, run_started_at, attempts, next_attempt_at, claimed_by, lease_until, last_status,
          last_error, created_at, updated_at
        from deliveries, generate_series(1, 1005) i where id = ${d.id}
      `)
    })
    const env = { DATABASE_URL: h.url, LOG_LEVEL: 'warn' }

    const text = await runCli(['ledger', 'replay', '--verify'], env)
    expect(text.code).toBe(1)
    const lines = text.stdout.split('\n').filter(Boolean)
    expect(lines.filter((l) => l.startsWith('DIFF '))).toHaveLength(1_000)
    expect(lines).toContain(
      `DIFF deliveries ${d.id}: inconsistent at position ${ledger[7]!.position}: delivery.claimed while the delivery is running: a claim takes a pending or retryable delivery`,
    )
    expect(lines).toContain(
      `DIFF deliveries ${d.id}: inconsistent at position ${ledger[8]!.position}: counted attempt 3 of run 1, the run has made 1: attempt 2 is missing`,
    )
    expect(lines).toContain('DIFF deliveries ffffffff-ffff-4fff-8fff-000000000001: extra_live')
    expect(lines).toContain('… and 7 more differences')
    expect(lines.at(-1)).toBe('1007 differences (deliveries extra_live 1005, deliveries inconsistent 2)')
    expect(text.stdout).not.toContain('no differences')

    const json = await runCli(['ledger', 'replay', '--verify', '--json'], env)
    expect(json.code).toBe(1)
    const report = JSON.parse(json.stdout) as { differencesTotal: number; differencesOmitted: number; differences: unknown[] }
    expect(report).toMatchObject({ differencesTotal: 1007, differencesOmitted: 7 })
    expect(report.differences).toHaveLength(1_000)
  })
})
