import { sql } from 'kysely'
import { afterAll, describe, expect, it } from 'vitest'
import { adminDbOf, bypassLedgerGuards, engineHarness, forgeDeliveries, type EngineHarness } from '@hookledger/testkit'
import { runCli } from './cli-process.js'

let h: EngineHarness | null = null
afterAll(async () => {
  await h?.close()
})

describe('ledger replay --verify', () => {
  it('finds no difference on a healthy database and names every row changed by hand', async () => {
    h = await engineHarness()
    h.receiver.enqueue({ status: 500 }) // one retry, so the history has more than one attempt
    const { endpoint } = await h.createEndpoint()
    await h.publish({ id: 'evt_1' })
    await h.publish({ id: 'evt_2' })
    await h.step()
    h.clock.advance(5_000)
    await h.step()
    const env = { DATABASE_URL: h.url, LOG_LEVEL: 'warn' }

    const healthy = await runCli(['ledger', 'replay', '--verify'], env)
    expect(healthy.stdout).toContain('no differences')
    expect(healthy.code).toBe(0)

    // The delivery claimed first answered 500 and waits for its retry (the other one, due
    // earlier, went next).
    const [d1] = await h.db.selectFrom('deliveries').select('id').where('state', '=', 'retryable').execute()
    const audit = await runCli(['ledger', 'audit', '--delivery', d1!.id], env)
    expect(audit.code).toBe(0)
    // Its trail starts with what enqueued it: its event's fan-out decision (ledger format 3).
    expect(audit.stdout.split('\n').filter(Boolean).map((l) => l.split(/\s+/)[2])).toEqual([
      'fanout.decided',
      'delivery.claimed',
      'delivery.attempted',
      'delivery.retry_scheduled',
    ])
    // Behind the ledger's back: a delivery's attempts, an endpoint's description, and a
    // delivery row that no ledger entry ever created.
    // The database refuses each of these outright — to the service's own role (no privilege) …
    await expect(sql`update deliveries set attempts = 7 where id = ${d1!.id}`.execute(h.db)).rejects.toThrow(/permission denied for view deliveries/)
    await expect(sql`update endpoints set description = 'edited' where id = ${endpoint.id}`.execute(h.db)).rejects.toThrow(/permission denied for table endpoints/)
    // … and, triggers on, to a superuser too.
    await expect(sql`update deliveries set attempts = 7 where id = ${d1!.id}`.execute(adminDbOf(h.db))).rejects.toThrow(/projections change only through hookledger_write/)
    await expect(sql`update ledger set actor = 'someone' where delivery_id = ${d1!.id}`.execute(h.db)).rejects.toThrow(/permission denied for table ledger/)
    await expect(sql`delete from ledger where delivery_id = ${d1!.id}`.execute(h.db)).rejects.toThrow(/permission denied for table ledger/)
    await expect(sql`truncate ledger`.execute(h.db)).rejects.toThrow(/permission denied for table ledger/)
    await expect(sql`update ledger set actor = 'someone' where delivery_id = ${d1!.id}`.execute(adminDbOf(h.db))).rejects.toThrow(/append-only/)
    // …so they are forged with triggers off, as a superuser could.
    const forged = '00000000-0000-4000-8000-000000000001'
    await bypassLedgerGuards(h.db, async (trx) => {
      await sql`update delivery_states set attempts = 7 where id = ${d1!.id}`.execute(trx)
      await sql`update endpoints set description = 'edited' where id = ${endpoint.id}`.execute(trx)
      await forgeDeliveries(trx, sql`
        select ${forged}::uuid, owner_id, endpoint_id, 'evt_forged', event_type, 'completed', run,
          run_started_at, attempts, null::timestamptz, null, null::timestamptz, last_status, last_error, created_at, updated_at
        from deliveries where id = ${d1!.id}
      `)
    })

    const tampered = await runCli(['ledger', 'replay', '--verify'], env)
    expect(tampered.code).toBe(1)
    expect(tampered.stdout).toContain(`DIFF deliveries ${d1!.id}: changed (attempts: live=7`)
    expect(tampered.stdout).toMatch(new RegExp(`DIFF endpoints ${endpoint.id}: changed \\(description: live="edited" replayed=""\\)`))
    expect(tampered.stdout).toContain(`DIFF deliveries ${forged}: extra_live`)
    expect(tampered.stdout).not.toContain('no differences')
  })
})
