import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { engineHarness, type EngineHarness } from '@hookledger/testkit'

/**
 * The database itself enforces "the ledger is the truth": the ledger is append-only, and a
 * projection row changes only in a transaction that appends a ledger entry about that row.
 */
describe('the database enforces the ledger', () => {
  let h: EngineHarness
  let endpointId = ''
  let deliveryId = ''
  beforeAll(async () => {
    h = await engineHarness()
    const { endpoint } = await h.createEndpoint()
    endpointId = endpoint.id
    await h.publish({ id: 'evt_guarded' })
    await h.step()
    deliveryId = (await h.deliveryOf('evt_guarded')).id
  })
  afterAll(() => h.close())

  it('refuses UPDATE, DELETE and TRUNCATE of ledger rows', async () => {
    const cases = [
      sql`update ledger set actor = 'forger' where delivery_id = ${deliveryId}::uuid`,
      sql`update ledger set payload = '{}'::jsonb`,
      sql`delete from ledger where delivery_id = ${deliveryId}::uuid`,
      sql`truncate ledger`,
    ]
    for (const statement of cases) await expect(statement.execute(h.db)).rejects.toThrow(/the ledger is append-only/)
    expect((await h.ledgerOf('delivery_id', deliveryId)).map((r) => r.kind)).toEqual([
      'delivery.enqueued',
      'delivery.claimed',
      'delivery.attempted',
      'delivery.completed',
    ])
  })

  it('refuses a projection change with no ledger entry about that row in the same transaction', async () => {
    const forged = '00000000-0000-4000-8000-0000000000aa'
    const cases: [string, ReturnType<typeof sql>][] = [
      ['update of deliveries', sql`update deliveries set attempts = 9 where id = ${deliveryId}::uuid`],
      ['delete of deliveries', sql`delete from deliveries where id = ${deliveryId}::uuid`],
      ['update of endpoints', sql`update endpoints set url = 'https://elsewhere.example' where id = ${endpointId}::uuid`],
      ['update of endpoints', sql`update endpoints set busy_until = now(), busy_delivery_id = ${deliveryId}::uuid where id = ${endpointId}::uuid`],
      ['delete of endpoints', sql`delete from endpoints where id = ${endpointId}::uuid`],
      [
        'insert of deliveries',
        sql`insert into deliveries select ${forged}::uuid, owner_id, endpoint_id, 'evt_x', event_type, state, run,
              run_started_at, attempts, next_attempt_at, claimed_by, lease_until, last_status, last_error, created_at, updated_at
            from deliveries where id = ${deliveryId}::uuid`,
      ],
    ]
    for (const [what, statement] of cases) {
      // A delete needs the entry that removes the row (migration 0010), not just any entry.
      const needed = what.startsWith('delete of deliveries') ? 'a deliveries.retired entry naming it' : what.startsWith('delete of endpoints') ? 'its endpoint.purged entry' : 'a ledger entry'
      await expect(statement.execute(h.db), what).rejects.toThrow(new RegExp(`${what}\\.[0-9a-f-]+ without ${needed.replaceAll('.', '\\.')} in the same transaction`))
    }
    // An ordinary entry about a delivery does not let it leave: only a retirement naming it does.
    await expect(
      h.db.transaction().execute(async (trx) => {
        await sql`
          insert into ledger (occurred_at, owner_id, kind, endpoint_id, delivery_id, payload, actor)
          values (now(), 'default', 'delivery.completed', ${endpointId}::uuid, ${deliveryId}::uuid, '{}', 'forger')
        `.execute(trx)
        await sql`delete from deliveries where id = ${deliveryId}::uuid`.execute(trx)
      }),
    ).rejects.toThrow(/without a deliveries\.retired entry naming it/)
    // An entry about another row does not count.
    await expect(
      h.db.transaction().execute(async (trx) => {
        await sql`
          insert into ledger (occurred_at, owner_id, kind, endpoint_id, delivery_id, payload, actor)
          values (now(), 'default', 'delivery.completed', ${endpointId}::uuid, ${forged}::uuid, '{}', 'forger')
        `.execute(trx)
        await sql`update deliveries set attempts = 9 where id = ${deliveryId}::uuid`.execute(trx)
      }),
    ).rejects.toThrow(/without a ledger entry/)
    // Checked at the end of each statement (migration 0012): an entry appended by a later
    // statement comes too late; the write primitive appends them in the same statement.
    await expect(
      h.db.transaction().execute(async (trx) => {
        await sql`update deliveries set attempts = 9 where id = ${deliveryId}::uuid`.execute(trx)
        await sql`
          insert into ledger (occurred_at, owner_id, kind, endpoint_id, delivery_id, payload, actor)
          values (now(), 'default', 'delivery.completed', ${endpointId}::uuid, ${deliveryId}::uuid, '{}', 'forger')
        `.execute(trx)
      }),
    ).rejects.toThrow(/update of deliveries\.[0-9a-f-]+ without a ledger entry/)
    const row = await h.deliveryOf('evt_guarded')
    expect({ attempts: row.attempts, state: row.state }).toEqual({ attempts: 1, state: 'completed' })
    expect((await h.endpointOf(endpointId)).url).toBe(h.receiver.url())
    expect((await h.replay()).differences).toEqual([])
  })

  it('lets the write primitive through: every path of the engine still commits', async () => {
    // Claim, settle, retry, snooze, endpoint commands: the engine suites exercise them all;
    // here one more round trip end to end, then a clean replay.
    await h.publish({ id: 'evt_after' })
    await h.step()
    expect((await h.deliveryOf('evt_after')).state).toBe('completed')
    expect((await h.replay()).differences).toEqual([])
  })
})
